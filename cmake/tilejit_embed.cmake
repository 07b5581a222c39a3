# tilejit_embed_files(<out.cpp> <base dir> <files...>): writes a C++ file holding each file's text,
# so the library carries its kernels and device prelude and needs no source tree once installed.
function(tilejit_embed_files out_cpp base_dir)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cpp} -DBASE=${base_dir} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_files_script.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/embed_files_script.cmake
    COMMENT "Embedding ${base_dir} into ${out_cpp}"
    VERBATIM)
endfunction()
