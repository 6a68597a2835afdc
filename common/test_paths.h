// Where the tests find the tree's own files (schemas, docs, test data), by absolute path.
// test_paths.cc alone is compiled with the path (common/CMakeLists.txt): a path on every
// test file's command line would make that file's ccache entry this clone's own, and a
// second clone would compile it again.
#pragma once

#include <string>

namespace benchfleet::test_paths {

// The checkout's root.
extern const char* const kSourceDir;

inline std::string SchemasDir() { return std::string(kSourceDir) + "/schemas"; }
inline std::string DocsDir() { return std::string(kSourceDir) + "/docs"; }

}  // namespace benchfleet::test_paths
