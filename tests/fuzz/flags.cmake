# Included by the top CMakeLists.txt before src/ when PFLEX_FUZZ is ON: every
# target of the build (the library layers above all) gets libFuzzer's coverage
# instrumentation and ASan+UBSan; the harnesses in tests/fuzz add the fuzzer
# main. A separate build directory: scripts/fuzz.sh uses build-fuzz.
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "PFLEX_FUZZ needs clang (libFuzzer): configure with -DCMAKE_C_COMPILER=clang")
endif()
if(PFLEX_SANITIZE)
  message(FATAL_ERROR "PFLEX_FUZZ already builds with ASan+UBSan; leave PFLEX_SANITIZE off")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -gline-tables-only)
add_link_options(-fsanitize=address,undefined)
