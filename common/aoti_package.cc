#include "common/aoti_package.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

namespace benchfleet {
namespace {

using nlohmann::json;

// The zip format's records (PKWARE's APPNOTE.TXT, sections 4.3.7, 4.3.12, 4.3.14-16).
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndLocator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndRecordBytes = 22;
constexpr size_t kMaxCommentBytes = 0xffff;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kZip64Marker = 0xffffffff;
constexpr uint16_t kStored = 0;
// A central directory of more entries than this is not a package's.
constexpr uint64_t kMaxEntries = 1000000;
constexpr uint64_t kMaxCentralDirectoryBytes = uint64_t{256} << 20;

uint16_t U16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t U32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t U64(const unsigned char* p) { return U32(p) | (static_cast<uint64_t>(U32(p + 4)) << 32); }

struct Entry {
  std::string name;
  uint16_t method = 0;
  uint64_t size = 0;
  uint64_t local_offset = 0;
};

class ZipReader {
 public:
  explicit ZipReader(std::string path) : path_(std::move(path)) {}

  Status Open() {
    file_.open(path_, std::ios::binary);
    if (!file_) return NotFound("cannot read " + path_ + ": " + std::strerror(errno));
    file_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(file_.tellg());
    return Status::Ok();
  }

  StatusOr<std::vector<Entry>> Entries() {
    const size_t tail =
        static_cast<size_t>(std::min<uint64_t>(size_, kEndRecordBytes + kMaxCommentBytes));
    ASSIGN_OR_RETURN(std::vector<unsigned char> end, Read(size_ - tail, tail));
    std::optional<size_t> at;
    for (size_t i = tail >= kEndRecordBytes ? tail - kEndRecordBytes + 1 : 0; i-- > 0;) {
      if (U32(&end[i]) == kEndOfCentralDirectory) {
        at = i;
        break;
      }
    }
    if (!at) return NotZip("it has no zip end record");
    uint64_t count = U16(&end[*at + 10]);
    uint64_t directory_size = U32(&end[*at + 12]);
    uint64_t directory_offset = U32(&end[*at + 16]);
    const uint64_t end_offset = size_ - tail + *at;
    if (directory_offset == kZip64Marker || count == 0xffff || directory_size == kZip64Marker) {
      if (end_offset < 20) return NotZip("its zip64 end record is missing");
      ASSIGN_OR_RETURN(std::vector<unsigned char> locator, Read(end_offset - 20, 20));
      if (U32(locator.data()) != kZip64EndLocator) return NotZip("its zip64 end record is missing");
      ASSIGN_OR_RETURN(std::vector<unsigned char> end64, Read(U64(&locator[8]), 56));
      if (U32(end64.data()) != kZip64End) return NotZip("its zip64 end record is damaged");
      count = U64(&end64[32]);
      directory_size = U64(&end64[40]);
      directory_offset = U64(&end64[48]);
    }
    if (count > kMaxEntries || directory_size > kMaxCentralDirectoryBytes ||
        directory_offset + directory_size > size_) {
      return NotZip("its central directory lies outside the file");
    }
    ASSIGN_OR_RETURN(std::vector<unsigned char> directory, Read(directory_offset, directory_size));
    std::vector<Entry> entries;
    size_t p = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (p + kCentralHeaderBytes > directory.size() || U32(&directory[p]) != kCentralHeader) {
        return NotZip("its central directory is damaged at entry " + std::to_string(i));
      }
      const unsigned char* h = &directory[p];
      Entry entry;
      entry.method = U16(h + 10);
      uint64_t compressed = U32(h + 20);
      entry.size = U32(h + 24);
      const size_t name_length = U16(h + 28), extra_length = U16(h + 30),
                   comment_length = U16(h + 32);
      entry.local_offset = U32(h + 42);
      if (p + kCentralHeaderBytes + name_length + extra_length + comment_length >
          directory.size()) {
        return NotZip("its central directory is damaged at entry " + std::to_string(i));
      }
      entry.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderBytes), name_length);
      // Sizes and offset too large for 32 bits are in the zip64 extra field, in order.
      const unsigned char* extra = h + kCentralHeaderBytes + name_length;
      for (size_t e = 0; e + 4 <= extra_length;) {
        const uint16_t id = U16(extra + e), length = U16(extra + e + 2);
        if (e + 4 + length > extra_length) break;
        if (id == kZip64ExtraId) {
          size_t f = e + 4;
          for (uint64_t* field : {&entry.size, &compressed, &entry.local_offset}) {
            if (*field == kZip64Marker && f + 8 <= e + 4 + length) {
              *field = U64(extra + f);
              f += 8;
            }
          }
        }
        e += 4 + length;
      }
      if (entry.method == kStored && compressed != entry.size) {
        return NotZip("entry " + entry.name + " is stored with two sizes");
      }
      entries.push_back(std::move(entry));
      p += kCentralHeaderBytes + name_length + extra_length + comment_length;
    }
    return entries;
  }

  StatusOr<std::string> Contents(const Entry& entry) {
    ASSIGN_OR_RETURN(std::vector<unsigned char> local, Read(entry.local_offset, kLocalHeaderBytes));
    if (U32(local.data()) != kLocalHeader)
      return NotZip("entry " + entry.name + " has no local header");
    const uint64_t data =
        entry.local_offset + kLocalHeaderBytes + U16(&local[26]) + U16(&local[28]);
    ASSIGN_OR_RETURN(std::vector<unsigned char> bytes, Read(data, entry.size));
    return std::string(bytes.begin(), bytes.end());
  }

  Status NotZip(const std::string& why) const {
    return InvalidArgument(path_ +
                           " is not an AOTInductor package (a .pt2 zip from "
                           "torch._inductor.aoti_compile_and_package): " +
                           why);
  }

 private:
  StatusOr<std::vector<unsigned char>> Read(uint64_t offset, uint64_t length) {
    if (offset > size_ || length > size_ - offset)
      return NotZip("it ends before its zip records do");
    std::vector<unsigned char> out(static_cast<size_t>(length));
    file_.clear();
    file_.seekg(static_cast<std::streamoff>(offset));
    file_.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(length));
    if (!file_) return Unavailable("cannot read " + path_ + " at byte " + std::to_string(offset));
    return out;
  }

  std::string path_;
  std::ifstream file_;
  uint64_t size_ = 0;
};

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "<archive>/data/aotinductor/<model>/<file>" -> <model>; empty for other entries.
std::string ModelOf(const std::string& name) {
  const std::string marker = "/data/aotinductor/";
  const size_t at = name.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  const size_t slash = name.find('/', start);
  return slash == std::string::npos ? "" : name.substr(start, slash - start);
}

std::string TextOf(const json& metadata, const char* key) {
  const auto it = metadata.find(key);
  return it != metadata.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

StatusOr<AotiPackageFacts> ReadAotiPackage(const std::string& path) {
  ZipReader zip(path);
  RETURN_IF_ERROR(zip.Open());
  ASSIGN_OR_RETURN(std::vector<Entry> entries, zip.Entries());
  // The wrapper's metadata of the default model, else of the first model; a package
  // from before the wrapper/kernel split names it <hash>_metadata.json.
  const Entry* chosen = nullptr;
  int chosen_rank = 0;
  for (const Entry& entry : entries) {
    const std::string model = ModelOf(entry.name);
    if (model.empty() || !EndsWith(entry.name, "metadata.json") ||
        EndsWith(entry.name, "kernel_metadata.json")) {
      continue;
    }
    const int rank = (model == kAotiDefaultModel ? 2 : 1) * 2 +
                     (EndsWith(entry.name, "wrapper_metadata.json") ? 1 : 0);
    if (rank > chosen_rank) {
      chosen = &entry;
      chosen_rank = rank;
    }
  }
  if (chosen == nullptr) {
    return zip.NotZip(
        "it is a zip without an AOTInductor model (no data/aotinductor/<model>/*_metadata.json)");
  }
  if (chosen->method != kStored) {
    return zip.NotZip(
        chosen->name + " is compressed (method " + std::to_string(chosen->method) +
        "); aoti_compile_and_package stores its entries, so write the package with it "
        "rather than zipping it again");
  }
  if (chosen->size > static_cast<uint64_t>(kMaxAotiMetadataBytes)) {
    return zip.NotZip(chosen->name + " is larger than " + std::to_string(kMaxAotiMetadataBytes) +
                      " bytes");
  }
  ASSIGN_OR_RETURN(std::string text, zip.Contents(*chosen));
  json metadata = json::parse(text, nullptr, false);
  if (metadata.is_discarded() || !metadata.is_object()) {
    return zip.NotZip(chosen->name + " is not a JSON object");
  }
  AotiPackageFacts facts;
  facts.model = ModelOf(chosen->name);
  facts.device = TextOf(metadata, "AOTI_DEVICE_KEY");
  facts.machine = TextOf(metadata, "AOTI_MACHINE");
  facts.platform = TextOf(metadata, "AOTI_PLATFORM");
  facts.torch_version = TextOf(metadata, kAotiTorchVersionKey);
  if (facts.device.empty()) return zip.NotZip(chosen->name + " names no device (AOTI_DEVICE_KEY)");
  facts.metadata = std::move(metadata);
  return facts;
}

}  // namespace benchfleet
