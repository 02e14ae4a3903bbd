# hvd_unity_by_folder(TARGET): with HVD_UNITY_BUILD, each source folder of
# TARGET compiles as one unit (CMake's unity build, one group a folder).
# A folder's files include the same heavy headers (Gloo, Boost.Asio,
# nlohmann/json, spdlog, fmt) and instantiate the same templates: as units,
# a clean build takes an eighth less CPU (docs/testing.md, "Time budget").
# A file with its own compile options stays out of the units (its options
# would apply to the whole unit), as does one marked
# SKIP_UNITY_BUILD_INCLUSION. Call it in the directory that adds TARGET's
# sources, after their own properties are set.
function(hvd_unity_by_folder target)
  if(NOT HVD_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON
    UNITY_BUILD_MODE GROUP)
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    get_source_file_property(options "${source}" COMPILE_OPTIONS)
    if(options)
      continue()
    endif()
    get_filename_component(folder "${source}" DIRECTORY)
    string(MAKE_C_IDENTIFIER "${target}_${folder}" group)
    set_source_files_properties("${source}" PROPERTIES UNITY_GROUP "${group}")
  endforeach()
endfunction()
