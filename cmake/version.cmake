# Writes the build's commit into a small source file, run at every build (cmake -P):
#   -DSOURCE_DIR=<the clone> -DOUT=<file> [-DCOMMIT=<fixed commit>]
# The file is rewritten only when its text changes, so an unchanged commit recompiles
# nothing and keeps ccache's hits; a new commit recompiles that one file and relinks.
set(commit "${COMMIT}")
if(NOT commit)
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                    OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
    if(failed)
      set(commit "")
    else()
      # Tracked files edited since the commit: the build is not that commit's.
      execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes ERROR_QUIET)
      if(changes)
        string(APPEND commit "-dirty")
      endif()
    endif()
  endif()
endif()
set(text "// Written by cmake/version.cmake at build time; not in the repository.\n")
string(APPEND text "extern const char* const cutcheck_build_commit;\n")
string(APPEND text "const char* const cutcheck_build_commit = \"${commit}\";\n")
set(current "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" current)
endif()
if(NOT current STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
