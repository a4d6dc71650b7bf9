# Injected with -DCMAKE_PROJECT_INCLUDE=<this file> when building against the ROS 2 wheels from PyPI
# (never needed, and never used, on a regular ROS 2 install).
#
# Why: the wheels' exported targets `<pkg>::<pkg>__rosidl_generator_py` name the include folder of
# the machine that built the wheels (/opt/python/cp311-cp311/...) in INTERFACE_INCLUDE_DIRECTORIES.
# That folder does not exist here, so CMake's generate step fails. rosidl_generator_py adds the
# correct Python and NumPy include folders itself, so dropping the stale entries is enough.
# This file changes no installed file: it edits the imported targets in memory at the end of
# configuration.

cmake_minimum_required(VERSION 3.19)  # cmake_language(DEFER)

set(TASK_LEARNING_STALE_INCLUDE_PREFIX "/opt/python/")

function(task_learning_drop_stale_wheel_includes)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_dirs "${_target}" INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_kept "")
    set(_dropped FALSE)
    foreach(_dir IN LISTS _dirs)
      string(FIND "${_dir}" "${TASK_LEARNING_STALE_INCLUDE_PREFIX}" _at)
      if(_at EQUAL 0)
        set(_dropped TRUE)
      else()
        list(APPEND _kept "${_dir}")
      endif()
    endforeach()
    if(_dropped)
      set_property(TARGET "${_target}" PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
    endif()
  endforeach()
endfunction()

# Run after the project's CMakeLists.txt has imported every package.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL task_learning_drop_stale_wheel_includes)
