# The libraries the engine links, linked so that an installed `opprof` needs none of their shared
# libraries: simdjson and SQLite built here from their amalgamated sources, fmt header-only,
# CLI11 header-only. zlib stays a system library.

# The folder CACHE_VAR names (default .deps/SUBDIR) must hold FILE; where it does not, SCRIPT makes it there (it
# downloads Debian's source package; install_deps.sh and gpu_deps.sh run the scripts beforehand).
function(opprof_source_folder CACHE_VAR SUBDIR FILE SCRIPT WHAT)
  set(${CACHE_VAR} "${PROJECT_SOURCE_DIR}/.deps/${SUBDIR}" CACHE PATH "Folder with ${WHAT} (scripts/${SCRIPT} fills it)")
  if(NOT EXISTS "${${CACHE_VAR}}/${FILE}")
    execute_process(COMMAND "${PROJECT_SOURCE_DIR}/scripts/${SCRIPT}" "${${CACHE_VAR}}" RESULT_VARIABLE fetch_rc)
    if(NOT fetch_rc EQUAL 0)
      message(FATAL_ERROR "${WHAT}: not in ${${CACHE_VAR}}, and scripts/${SCRIPT} could not make them there "
                          "(on a machine without a registry, carry the .deps/ that scripts/gpu_deps.sh makes)")
    endif()
  endif()
endfunction()

# simdjson: Debian ships only libsimdjson.so, so the amalgamated source is compiled into a static library.
opprof_source_folder(OPPROF_SIMDJSON_SOURCE_DIR simdjson simdjson.cpp fetch_simdjson.sh
                     "simdjson's amalgamated simdjson.h and simdjson.cpp")
add_library(opprof_simdjson STATIC "${OPPROF_SIMDJSON_SOURCE_DIR}/simdjson.cpp")
target_include_directories(opprof_simdjson SYSTEM PUBLIC "${OPPROF_SIMDJSON_SOURCE_DIR}")
add_library(simdjson::simdjson ALIAS opprof_simdjson)

# SQLite: compiled here from the amalgamation scripts/fetch_sqlite.sh makes from Debian's source package (with
# Debian's patches), with settings of its own: Debian's libsqlite3.a has no lookaside allocator and keeps memory
# statistics (a global mutex on every allocation) and secure delete on, which cost the profile writer about a
# tenth of a million-kernel tracer log's time (bench/README.md). Always optimized and never instrumented: the
# sanitizer and fuzz trees check opprof's code, not SQLite's.
opprof_source_folder(OPPROF_SQLITE_SOURCE_DIR sqlite sqlite3.c fetch_sqlite.sh
                     "SQLite's amalgamated sqlite3.c and sqlite3.h")
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
