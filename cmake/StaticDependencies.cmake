# The libraries the engine links, linked so that an installed `opprof` needs none of their shared
# libraries: simdjson and SQLite built here from their amalgamated sources, fmt header-only,
# CLI11 header-only. zlib stays a system library.

# simdjson: Debian ships only libsimdjson.so, so the amalgamated source (scripts/fetch_simdjson.sh, which
# install_deps.sh and gpu_deps.sh run) is compiled into a static library.
set(OPPROF_SIMDJSON_SOURCE_DIR "${PROJECT_SOURCE_DIR}/.deps/simdjson" CACHE PATH
    "Folder with simdjson's amalgamated simdjson.h and simdjson.cpp (scripts/fetch_simdjson.sh fills it)")
if(NOT EXISTS "${OPPROF_SIMDJSON_SOURCE_DIR}/simdjson.cpp")
  execute_process(COMMAND "${PROJECT_SOURCE_DIR}/scripts/fetch_simdjson.sh" "${OPPROF_SIMDJSON_SOURCE_DIR}"
                  RESULT_VARIABLE _opprof_fetch_rc)
  if(NOT _opprof_fetch_rc EQUAL 0)
    message(FATAL_ERROR "simdjson's source is not in ${OPPROF_SIMDJSON_SOURCE_DIR} and "
                        "scripts/fetch_simdjson.sh could not fetch it (on a machine without a registry, "
                        "carry the .deps/ that scripts/gpu_deps.sh makes)")
  endif()
endif()
add_library(opprof_simdjson STATIC "${OPPROF_SIMDJSON_SOURCE_DIR}/simdjson.cpp")
target_include_directories(opprof_simdjson SYSTEM PUBLIC "${OPPROF_SIMDJSON_SOURCE_DIR}")
add_library(simdjson::simdjson ALIAS opprof_simdjson)

# SQLite: compiled here from the amalgamation scripts/fetch_sqlite.sh makes from Debian's source package (with
# Debian's patches), with settings of its own: Debian's libsqlite3.a has no lookaside allocator and keeps memory
# statistics (a global mutex on every allocation) and secure delete on, which cost the profile writer about a
# tenth of a million-kernel profile's time (bench/README.md). Always optimized and never instrumented: the
# sanitizer and fuzz trees check opprof's code, not SQLite's.
set(OPPROF_SQLITE_SOURCE_DIR "${PROJECT_SOURCE_DIR}/.deps/sqlite" CACHE PATH
    "Folder with SQLite's amalgamated sqlite3.c and sqlite3.h (scripts/fetch_sqlite.sh fills it)")
if(NOT EXISTS "${OPPROF_SQLITE_SOURCE_DIR}/sqlite3.c")
  execute_process(COMMAND "${PROJECT_SOURCE_DIR}/scripts/fetch_sqlite.sh" "${OPPROF_SQLITE_SOURCE_DIR}"
                  RESULT_VARIABLE _opprof_fetch_rc)
  if(NOT _opprof_fetch_rc EQUAL 0)
    message(FATAL_ERROR "SQLite's source is not in ${OPPROF_SQLITE_SOURCE_DIR} and "
                        "scripts/fetch_sqlite.sh could not make it (on a machine without a registry, "
                        "carry the .deps/ that scripts/gpu_deps.sh makes)")
  endif()
endif()
enable_language(C)
find_package(Threads REQUIRED)
add_library(opprof_sqlite3 STATIC "${OPPROF_SQLITE_SOURCE_DIR}/sqlite3.c")
target_include_directories(opprof_sqlite3 SYSTEM PUBLIC "${OPPROF_SQLITE_SOURCE_DIR}")
# THREADSAFE=2: a connection is used by one thread at a time (the writer gives each thread its own), so
# connections need no mutex of their own. MAX_VARIABLE_NUMBER as Debian's: the writer's multi-row inserts
# bind up to the limit. The rest is SQLite's list of recommended options (sqlite.org/compile.html).
target_compile_definitions(opprof_sqlite3 PRIVATE
  SQLITE_THREADSAFE=2 SQLITE_DEFAULT_MEMSTATUS=0 SQLITE_DQS=0 SQLITE_LIKE_DOESNT_MATCH_BLOBS
  SQLITE_MAX_EXPR_DEPTH=0 SQLITE_OMIT_DEPRECATED SQLITE_OMIT_SHARED_CACHE SQLITE_USE_ALLOCA
  SQLITE_OMIT_LOAD_EXTENSION SQLITE_ENABLE_MATH_FUNCTIONS SQLITE_MAX_VARIABLE_NUMBER=250000)
# After the build type's flags, so that these win: optimized, without debug information (a tenth of the tree's
# compile time otherwise), and quiet (SQLite's code is not held to opprof's warnings).
target_compile_options(opprof_sqlite3 PRIVATE -O2 -g0 -w)
target_link_libraries(opprof_sqlite3 INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)

find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
