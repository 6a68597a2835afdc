// The translation unit that compiles LibTorch's precompiled headers
// (benchfleet_torch_pch in worker/CMakeLists.txt); it has no code of its own.
