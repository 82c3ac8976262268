# The commit a build is made from, generated at build time (not when CMake configures), so
# that a commit followed by an incremental rebuild records the new commit.
#
# include()d by CMakeLists.txt: biaslab_git_info(TARGET OUT_FILE) adds a target that runs
# this file in script mode at every build. Run as `cmake -DSOURCE_DIR=... -DOUTPUT=... -P`:
# writes OUTPUT, a C++ file defining biaslab::build::kGitCommit (12 hex digits, "unknown"
# outside a git checkout) and kGitDirty (tracked files differ from the commit), and rewrites
# it only when its content changes: an unchanged commit recompiles nothing.
if(CMAKE_SCRIPT_MODE_FILE)
  set(commit "unknown")
  set(dirty false)
  execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE head RESULT_VARIABLE failed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT failed AND head)
    set(commit "${head}")
    execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY "${SOURCE_DIR}"
      OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      set(dirty true)
    endif()
  endif()
  string(CONCAT text "// Generated at build time by scripts/git_info.cmake.\n#include \"core/build_info.h\"\n"
         "namespace biaslab::build {\nconst char* const kGitCommit = \"${commit}\";\n"
         "const bool kGitDirty = ${dirty};\n}  // namespace biaslab::build\n")
  set(old "")
  if(EXISTS "${OUTPUT}")
    file(READ "${OUTPUT}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${OUTPUT}" "${text}")
  endif()
  return()
endif()

set(BIASLAB_GIT_INFO_SCRIPT "${CMAKE_CURRENT_LIST_FILE}")
function(biaslab_git_info target out_file)
  add_custom_target(${target} ALL
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR} -DOUTPUT=${out_file} -P ${BIASLAB_GIT_INFO_SCRIPT}
    BYPRODUCTS ${out_file}
    COMMENT "Recording the git commit"
    VERBATIM)
  # Compiled on its own: a new commit recompiles this one small file, nothing else.
  set_source_files_properties(${out_file} PROPERTIES GENERATED ON SKIP_UNITY_BUILD_INCLUSION ON
    SKIP_PRECOMPILE_HEADERS ON)
endfunction()
