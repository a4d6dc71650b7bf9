# Shared by every package under interfaces/standard/: the robot's standard ROS interface packages
# (nav2_msgs, control_msgs, tf2_msgs, moveit_msgs and what MoveGroup needs), built with rosidl
# under their upstream names where the machine has no ROS install providing them.
#
# Each package folder holds the definitions common to every supported distribution in msg/, srv/
# and action/, and the ones whose layout differs between distributions in distro/<distribution>/.
# TASK_LEARNING_ROS_DISTRO (-D; scripts/bootstrap.sh passes config/ros_interfaces.yaml's value)
# picks the layout. Only the types the stack speaks, and the types they contain, are defined: a
# subset of each upstream package, with the same names and field layouts (docs/ros.md).

set(TASK_LEARNING_ROS_DISTROS humble jazzy kilted)

macro(task_learning_standard_interfaces)
  cmake_parse_arguments(_tlsi "" "" "DEPENDENCIES" ${ARGN})
  if(NOT TASK_LEARNING_ROS_DISTRO)
    set(TASK_LEARNING_ROS_DISTRO kilted)
  endif()
  if(NOT TASK_LEARNING_ROS_DISTRO IN_LIST TASK_LEARNING_ROS_DISTROS)
    message(FATAL_ERROR "TASK_LEARNING_ROS_DISTRO=${TASK_LEARNING_ROS_DISTRO}: not one of ${TASK_LEARNING_ROS_DISTROS}")
  endif()
  get_filename_component(_tlsi_dir "${CMAKE_CURRENT_SOURCE_DIR}" REALPATH)
  set(_tlsi_distro_dir "${_tlsi_dir}/distro/${TASK_LEARNING_ROS_DISTRO}")

  enable_language(C CXX)
  if(NOT CMAKE_CXX_STANDARD)
    set(CMAKE_CXX_STANDARD 17)
  endif()
  find_package(ament_cmake REQUIRED)
  find_package(rosidl_default_generators REQUIRED)
  foreach(_tlsi_dep IN LISTS _tlsi_DEPENDENCIES)
    find_package(${_tlsi_dep} REQUIRED)
  endforeach()

  file(GLOB _tlsi_common RELATIVE "${_tlsi_dir}" CONFIGURE_DEPENDS
    "${_tlsi_dir}/msg/*.msg" "${_tlsi_dir}/srv/*.srv" "${_tlsi_dir}/action/*.action")
  file(GLOB _tlsi_distro RELATIVE "${_tlsi_distro_dir}" CONFIGURE_DEPENDS
    "${_tlsi_distro_dir}/msg/*.msg" "${_tlsi_distro_dir}/srv/*.srv" "${_tlsi_distro_dir}/action/*.action")
  list(SORT _tlsi_common)
  list(SORT _tlsi_distro)
  set(_tlsi_interfaces ${_tlsi_common})
  foreach(_tlsi_file IN LISTS _tlsi_distro)
    if(_tlsi_file IN_LIST _tlsi_common)
      message(FATAL_ERROR "${PROJECT_NAME}: ${_tlsi_file} is both common and in distro/${TASK_LEARNING_ROS_DISTRO}/")
    endif()
    # rosidl's "<absolute base>:<relative path>" form for a file outside the package folder's root.
    list(APPEND _tlsi_interfaces "${_tlsi_distro_dir}:${_tlsi_file}")
  endforeach()
  if(NOT _tlsi_interfaces)
    message(FATAL_ERROR "${PROJECT_NAME}: no interface files in ${_tlsi_dir}")
  endif()

  rosidl_generate_interfaces(${PROJECT_NAME} ${_tlsi_interfaces} DEPENDENCIES ${_tlsi_DEPENDENCIES})
  ament_export_dependencies(rosidl_default_runtime)
  ament_package()
endmacro()
