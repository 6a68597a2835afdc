#include "common/test_paths.h"

namespace benchfleet::test_paths {

const char* const kSourceDir = BENCHFLEET_SOURCE_DIR;

}  // namespace benchfleet::test_paths
