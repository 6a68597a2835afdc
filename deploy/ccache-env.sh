# Sourced by the build scripts (build.sh, sanitize.sh, fuzz.sh) from the checkout's root.
# ccache hashes paths relative to the checkout, so every clone shares one cache. With
# debug info it would also hash the build's working directory (a clone's own path);
# CCACHE_NOHASHDIR leaves it out, so an object built in another clone may name that
# clone's directory in its debug info.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# The worker's LibTorch headers are precompiled (worker/CMakeLists.txt): ccache caches a
# file that uses the precompiled header only when told that the header's macros and
# __TIME__ may be taken from it, and that a header made moments before the compile (the
# precompiled one, in a fresh build directory) may be hashed by its content.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
