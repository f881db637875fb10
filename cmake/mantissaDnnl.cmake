# oneDNN's CPU library as the imported target mantissa::dnnl. Used by the build and by the
# installed package alike. Debian's dnnl-config.cmake demands OpenCL (its GPU runtime); the
# CPU library alone is enough, so the library is found directly.
if(NOT TARGET mantissa::dnnl)
  find_library(MANTISSA_DNNL_LIBRARY NAMES dnnl REQUIRED)
  add_library(mantissa::dnnl UNKNOWN IMPORTED)
  set_target_properties(mantissa::dnnl PROPERTIES IMPORTED_LOCATION "${MANTISSA_DNNL_LIBRARY}")
endif()
