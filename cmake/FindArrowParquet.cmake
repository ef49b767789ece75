# Apache Arrow's C++ library with Parquet, for `opprof export --parquet` (OPPROF_PARQUET: AUTO, ON, OFF).
# Sets OPPROF_ARROW_FOUND, OPPROF_ARROW_DESCRIPTION (where it came from, or why there is none) and, when
# found, the interface target opprof_arrow. Looked for in this order:
#  1. a system Arrow (Arrow's own CMake package, ParquetConfig.cmake: conda, Apache's apt repository);
#  2. pyarrow in OPPROF_TORCH_PYTHON's environment: its wheel ships the headers and libarrow.so.<N> /
#     libparquet.so.<N> (pyarrow.get_include(), the package directory), which is how pyarrow documents
#     building C++ against it. The executable then runs with that directory on its RPATH.
include(${CMAKE_CURRENT_LIST_DIR}/PythonQuery.cmake)

set(OPPROF_ARROW_FOUND FALSE)
set(OPPROF_ARROW_DESCRIPTION "OPPROF_PARQUET=OFF")
if(NOT OPPROF_PARQUET STREQUAL "OFF")
  find_package(Parquet CONFIG QUIET)
  if(Parquet_FOUND AND TARGET Parquet::parquet_shared)
    add_library(opprof_arrow INTERFACE)
    target_link_libraries(opprof_arrow INTERFACE Parquet::parquet_shared)
    set(OPPROF_ARROW_FOUND TRUE)
    set(OPPROF_ARROW_DESCRIPTION "Apache Arrow ${Arrow_VERSION} from ${Parquet_DIR}")
  else()
    # The shortest libarrow.so.<N> and libparquet.so.<N> of the package: the SONAME the wheel's other
    # libraries link to (pyarrow also has libarrow_python.so.<N>.<M>... beside them).
    opprof_python_lines(${OPPROF_TORCH_PYTHON} [=[
import glob, os, re, pyarrow
d = os.path.dirname(pyarrow.__file__)
def lib(name):
    found = [f for f in glob.glob(os.path.join(d, name + ".so.*")) if re.fullmatch(re.escape(name) + r"\.so\.\d+", os.path.basename(f))]
    return sorted(found, key=len)[0]
print(pyarrow.__version__)
print(pyarrow.get_include())
print(lib("libarrow"))
print(lib("libparquet"))
]=] _opprof_pyarrow)
    list(LENGTH _opprof_pyarrow _opprof_pyarrow_lines)
    if(_opprof_pyarrow_lines EQUAL 4)
      list(GET _opprof_pyarrow 0 _opprof_pyarrow_version)
      list(GET _opprof_pyarrow 1 _opprof_pyarrow_include)
      list(GET _opprof_pyarrow 2 _opprof_pyarrow_arrow)
      list(GET _opprof_pyarrow 3 _opprof_pyarrow_parquet)
      if(EXISTS "${_opprof_pyarrow_include}/parquet/arrow/writer.h")
        add_library(opprof_arrow INTERFACE)
        # SYSTEM: Arrow's headers are not ours to keep warnings-clean.
        target_include_directories(opprof_arrow SYSTEM INTERFACE "${_opprof_pyarrow_include}")
        target_link_libraries(opprof_arrow INTERFACE "${_opprof_pyarrow_parquet}" "${_opprof_pyarrow_arrow}")
        get_filename_component(_opprof_pyarrow_dir "${_opprof_pyarrow_arrow}" DIRECTORY)
        set(OPPROF_ARROW_RPATH "${_opprof_pyarrow_dir}")
        set(OPPROF_ARROW_FOUND TRUE)
        set(OPPROF_ARROW_DESCRIPTION "pyarrow ${_opprof_pyarrow_version}'s Arrow C++ (${_opprof_pyarrow_dir})")
      else()
        set(OPPROF_ARROW_DESCRIPTION "pyarrow ${_opprof_pyarrow_version} in ${OPPROF_TORCH_PYTHON} has no C++ headers")
      endif()
    else()
      set(OPPROF_ARROW_DESCRIPTION "no Arrow CMake package, and no pyarrow in ${OPPROF_TORCH_PYTHON}")
    endif()
  endif()
  if(OPPROF_PARQUET STREQUAL "ON" AND NOT OPPROF_ARROW_FOUND)
    message(FATAL_ERROR "OPPROF_PARQUET=ON, but Apache Arrow's C++ library was not found: "
                        "${OPPROF_ARROW_DESCRIPTION} (pip install pyarrow into that Python, or give "
                        "CMAKE_PREFIX_PATH an Arrow install)")
  endif()
endif()
