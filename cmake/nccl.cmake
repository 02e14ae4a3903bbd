# HVD_WITH_NCCL: finds the CUDA runtime's and NCCL's headers and libraries.
# Sets HVD_NCCL_FOUND, HVD_NCCL_VERSION (NCCL_VERSION_CODE, e.g. 22809) and
# the libraries' paths. hvd compiles against the headers and loads the
# libraries when a GPU collective first needs them (ops/nccl/system_api.cc),
# so a build with NCCL runs on machines without it and a process that
# never touches a GPU never maps NCCL's 200 MB.
string(TOLOWER "${HVD_WITH_NCCL}" hvd_nccl_mode)
if(NOT hvd_nccl_mode MATCHES "^(auto|on|off)$")
  message(FATAL_ERROR "HVD_WITH_NCCL='${HVD_WITH_NCCL}': use auto, on or off")
endif()
set(HVD_NCCL_FOUND OFF)
set(HVD_NCCL_VERSION 0)
if(NOT hvd_nccl_mode STREQUAL "off")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  # HVD_NCCL_ROOT: an NCCL outside the toolkit (the wheel's
  # HOROVOD_NCCL_HOME).
  find_path(HVD_NCCL_INCLUDE_DIR nccl.h
            HINTS ${HVD_NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS}
                  ${CUDAToolkit_ROOT}/include)
  find_library(HVD_NCCL_LIBRARY nccl
               HINTS ${HVD_NCCL_ROOT}/lib ${HVD_NCCL_ROOT}/lib64
                     ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64)
  find_library(HVD_CUDART_LIBRARY cudart
               HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64)
  set(hvd_nccl_missing "")
  if(NOT CUDAToolkit_FOUND OR NOT HVD_CUDART_LIBRARY)
    set(hvd_nccl_missing "the CUDA toolkit (set CUDAToolkit_ROOT)")
  elseif(NOT HVD_NCCL_INCLUDE_DIR OR NOT HVD_NCCL_LIBRARY)
    set(hvd_nccl_missing "NCCL's nccl.h and libnccl")
  else()
    file(STRINGS "${HVD_NCCL_INCLUDE_DIR}/nccl.h" hvd_nccl_defines
         REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    foreach(part MAJOR MINOR PATCH)
      string(REGEX MATCH "NCCL_${part} ([0-9]+)" _ "${hvd_nccl_defines}")
      set(hvd_nccl_${part} ${CMAKE_MATCH_1})
    endforeach()
    # NCCL_VERSION_CODE for 2.9 and newer.
    math(EXPR HVD_NCCL_VERSION
         "${hvd_nccl_MAJOR} * 10000 + ${hvd_nccl_MINOR} * 100 + ${hvd_nccl_PATCH}")
    # ncclCommShrink came with 2.27.
    if(HVD_NCCL_VERSION LESS 22700)
      set(hvd_nccl_missing "NCCL 2.27 or newer (found ${HVD_NCCL_VERSION})")
      set(HVD_NCCL_VERSION 0)
    endif()
  endif()
  if(hvd_nccl_missing)
    if(hvd_nccl_mode STREQUAL "on")
      message(FATAL_ERROR "HVD_WITH_NCCL=on needs ${hvd_nccl_missing}")
    endif()
    message(STATUS "NCCL backend: off (no ${hvd_nccl_missing})")
  else()
    set(HVD_NCCL_FOUND ON)
    get_filename_component(HVD_NCCL_LIBRARY_PATH "${HVD_NCCL_LIBRARY}" REALPATH)
    get_filename_component(HVD_CUDART_LIBRARY_PATH "${HVD_CUDART_LIBRARY}"
                           REALPATH)
    message(STATUS "NCCL backend: on (NCCL ${HVD_NCCL_VERSION}, "
                   "${HVD_NCCL_LIBRARY_PATH})")
  endif()
endif()
