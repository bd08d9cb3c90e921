# The model names `-m` and Python's LLM(model=...) take: the catalog, the cache and the default
# model. No network (that is lumen_model_store's), so the Python module links it without libcurl.
# Included by the top-level CMakeLists.txt before the Python module's build returns, since that
# build does not add src/cli.
add_library(lumen_model_names STATIC
  ${CMAKE_CURRENT_LIST_DIR}/closest_name.cc
  ${CMAKE_CURRENT_LIST_DIR}/model_catalog.cc
  ${CMAKE_CURRENT_LIST_DIR}/text_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/default_model.cc)
target_include_directories(lumen_model_names PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(lumen_model_names PUBLIC lumen_util nlohmann_json::nlohmann_json fmt::fmt PRIVATE lumen_warnings)
