# Sourced by the build scripts (build.sh, sanitize.sh, fuzz.sh) from the checkout's root.
# ccache hashes paths relative to the checkout, so every clone shares one cache. With
# debug info it would also hash the build's working directory (a clone's own path);
# CCACHE_NOHASHDIR leaves it out, so an object built in another clone may name that
# clone's directory in its debug info.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
