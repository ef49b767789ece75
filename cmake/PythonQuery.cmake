# opprof_python_lines(<python> <code> <out_var>): runs `<python> -c <code>` and sets <out_var> to the lines
# it printed, as a CMake list; empty when the interpreter is missing or the code failed. The parts built
# for the workload's interpreter (agents/torch_observer, agents/call_ranges) ask it where torch or the
# Python headers are this way.
function(opprof_python_lines python code out_var)
  execute_process(COMMAND ${python} -c "${code}"
    OUTPUT_VARIABLE lines RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    set(lines "")
  endif()
  string(REPLACE "\n" ";" lines "${lines}")
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()
