# The library's layers, bottom to top (docs/design.md, "Layers"). Each layer is
# one static library, pflex_<layer>, built from src/<layer>/*.c, linking only
# the layers it names here; every name must stand earlier in the list. Every
# public header (include/pflex/*.h) belongs to exactly one layer.
#
#   PFLEX_LAYERS                  the order
#   PFLEX_LAYER_<l>_DEPS          the layers it may use (transitively closed below)
#   PFLEX_LAYER_<l>_HEADERS       its public headers
#   PFLEX_LAYER_<l>_LIBS          outside libraries it links
set(PFLEX_LAYERS base core telemetry io gpu sweep report)

set(PFLEX_LAYER_base_DEPS)
set(PFLEX_LAYER_base_HEADERS error.h format.h progress.h provenance.h parallel.h)
set(PFLEX_LAYER_base_LIBS Threads::Threads)

set(PFLEX_LAYER_core_DEPS base)
set(PFLEX_LAYER_core_HEADERS runs.h pfi.h curve.h stats.h features.h predict.h alloc.h jobs.h
                             study.h twin.h refine.h study_predict.h gpu_models.h
                             reference.h)
list(APPEND PFLEX_LAYER_core_HEADERS objective.h shrink.h) # issue 12: objective, never worse than equal
set(PFLEX_LAYER_core_LIBS PkgConfig::GSL m)

set(PFLEX_LAYER_telemetry_DEPS core base)
set(PFLEX_LAYER_telemetry_HEADERS series.h tput.h)
set(PFLEX_LAYER_telemetry_LIBS m)

set(PFLEX_LAYER_io_DEPS telemetry core base)
set(PFLEX_LAYER_io_HEADERS caps_plan.h csv.h runs_csv.h runs_json.h jobs_json.h series_csv.h
                           model_json.h store.h runs_provenance.h)
set(PFLEX_LAYER_io_LIBS ${CSV_LIBRARY} PkgConfig::JANSSON PkgConfig::SQLITE m)

set(PFLEX_LAYER_gpu_DEPS core base)
set(PFLEX_LAYER_gpu_HEADERS gpu.h restore.h)
set(PFLEX_LAYER_gpu_LIBS PkgConfig::JANSSON ${CMAKE_DL_LIBS} m)

set(PFLEX_LAYER_sweep_DEPS gpu telemetry core base)
set(PFLEX_LAYER_sweep_HEADERS sweep.h)
set(PFLEX_LAYER_sweep_LIBS m)

set(PFLEX_LAYER_report_DEPS core base)
set(PFLEX_LAYER_report_HEADERS plot.h study_figures.h curves_figure.h)
set(PFLEX_LAYER_report_LIBS PkgConfig::PLPLOT m)
