# Helpers that keep every module's CMakeLists.txt a few lines long.
#
#   loom_cc_library(NAME base SRCS a.cc b.cc DEPS Threads::Threads [TORCH])
#     -> static library loom_base, include root src/, warnings on.
#   loom_cc_test(NAME base SRCS a_test.cc DEPS loom_base [LABELS unit])
#     -> gtest binary loom_base_test, each test registered with CTest under its labels.

set(LOOM_SRC_ROOT ${CMAKE_SOURCE_DIR}/src)

function(loom_cc_library)
  cmake_parse_arguments(ARG "TORCH" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(loom_${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(loom_${ARG_NAME} PUBLIC ${LOOM_SRC_ROOT})
  target_compile_options(loom_${ARG_NAME} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(loom_${ARG_NAME} PUBLIC ${ARG_DEPS})
  if(ARG_TORCH)
    # Only nn/, train/ and *_torch files may include torch; they parse ATen once through a PCH.
    target_link_libraries(loom_${ARG_NAME} PUBLIC ${TORCH_LIBRARIES})
    target_compile_options(loom_${ARG_NAME} PRIVATE -Wno-unused-parameter -Wno-sign-compare)
  endif()
endfunction()

function(loom_cc_test)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT LOOM_BUILD_TESTS)
    return()
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(loom_${ARG_NAME}_test ${ARG_SRCS})
  target_include_directories(loom_${ARG_NAME}_test PRIVATE ${LOOM_SRC_ROOT})
  target_compile_options(loom_${ARG_NAME}_test PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(loom_${ARG_NAME}_test PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(loom_${ARG_NAME}_test
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 300
    DISCOVERY_TIMEOUT 60)
endfunction()
