# The libraries the engine links, linked so that an installed `opprof` needs none of their shared
# libraries: simdjson built here from its amalgamated source, SQLite from its static archive, fmt header-only,
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

# SQLite: the static archive (Debian's libsqlite3-dev ships libsqlite3.a) and what it needs from libc.
find_package(Threads REQUIRED)
find_path(OPPROF_SQLITE3_INCLUDE_DIR sqlite3.h REQUIRED)
find_library(OPPROF_SQLITE3_ARCHIVE NAMES libsqlite3.a REQUIRED)
add_library(opprof_sqlite3 STATIC IMPORTED)
set_target_properties(opprof_sqlite3 PROPERTIES IMPORTED_LOCATION "${OPPROF_SQLITE3_ARCHIVE}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${OPPROF_SQLITE3_INCLUDE_DIR}")
target_link_libraries(opprof_sqlite3 INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)

find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
