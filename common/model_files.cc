#include "common/model_files.h"

#include <filesystem>

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr const char* kFileKeys[] = {"path", "sha256", "agent_path"};

// Calls fn(field, key, &value_holder) for each file-naming key: the holder is the object
// holding the key, so the key can be renamed.
using Visit = std::function<void(const std::string& field, const std::string& key, json& holder)>;

void VisitArgs(json& args, const std::string& where, const Visit& fn) {
  if (!args.is_object()) return;
  for (const char* key : kFileKeys) {
    if (args.contains(key)) fn(where + "." + key, key, args);
  }
}

// A `reference` value (or an array of them): the TorchScript ones' model_args.
void VisitReferences(json& value, const std::string& where, const Visit& fn) {
  auto one = [&](json& ref, const std::string& at) {
    if (ref.is_object() && ref.value("model", json()) == json("torchscript") &&
        ref.contains("model_args")) {
      VisitArgs(ref["model_args"], at + ".model_args", fn);
    }
  };
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) one(value[i], where + "[" + std::to_string(i) + "]");
  } else {
    one(value, where);
  }
}

void VisitSweep(json& sweep, const Visit& fn) {
  if (!sweep.is_object()) return;
  for (const char* model : {"torchscript", "aoti"}) {
    if (sweep.contains("models") && sweep["models"].is_object() &&
        sweep["models"].contains(model)) {
      VisitArgs(sweep["models"][model], std::string("models.") + model, fn);
    }
  }
  if (sweep.contains("matrix") && sweep["matrix"].is_object() &&
      sweep["matrix"].contains("reference")) {
    VisitReferences(sweep["matrix"]["reference"], "matrix.reference", fn);
  }
  // versus on a model's file ({"models.torchscript.path": [A, B]}): each key as a model
  // argument, visited through a holder of its own and written back under its new name.
  if (sweep.contains("versus") && sweep["versus"].is_object()) {
    json& versus = sweep["versus"];
    for (const char* model : {"torchscript", "aoti"}) {
      for (const char* key : kFileKeys) {
        const std::string axis = std::string("models.") + model + "." + key;
        if (!versus.contains(axis)) continue;
        json holder = {{key, versus[axis]}};
        fn("versus." + axis, key, holder);
        versus.erase(axis);
        for (const auto& [renamed, value] : holder.items())
          versus[std::string("models.") + model + "." + renamed] = value;
      }
    }
  }
  if (sweep.contains("exclude") && sweep["exclude"].is_array()) {
    json& exclude = sweep["exclude"];
    for (size_t i = 0; i < exclude.size(); ++i) {
      if (exclude[i].is_object() && exclude[i].contains("reference")) {
        VisitReferences(exclude[i]["reference"], "exclude[" + std::to_string(i) + "].reference",
                        fn);
      }
    }
  }
}

// The strings of a key's value: one, or each of an argument axis.
void EachString(const json& value, const std::string& field,
                const std::function<void(const std::string&, const std::string&)>& fn) {
  if (value.is_string()) {
    fn(field, value.get<std::string>());
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i].is_string())
        fn(field + "[" + std::to_string(i) + "]", value[i].get<std::string>());
    }
  }
}

}  // namespace

std::vector<ModelFileRef> FindModelFiles(const json& sweep) {
  std::vector<ModelFileRef> out;
  json copy = sweep;  // the visitor may rename; here it only reads
  VisitSweep(copy, [&](const std::string& field, const std::string& key, json& holder) {
    EachString(holder[key], field, [&](const std::string& at, const std::string& value) {
      out.push_back({at, key, value});
    });
  });
  return out;
}

Status NameModelsByContent(json* sweep, const std::map<std::string, std::string>& sha256_of) {
  Status status;
  VisitSweep(*sweep, [&](const std::string& field, const std::string& key, json& holder) {
    if (key != "path" || !status.ok()) return;
    json hashes;
    auto hash_of = [&](const json& path) -> json {
      auto it = path.is_string() ? sha256_of.find(path.get<std::string>()) : sha256_of.end();
      if (it == sha256_of.end()) {
        status = InvalidArgument(field + ": " + path.dump() + " was not uploaded");
        return json();
      }
      return it->second;
    };
    const json& paths = holder["path"];
    if (paths.is_array()) {
      hashes = json::array();
      for (const json& path : paths) hashes.push_back(hash_of(path));
    } else {
      hashes = hash_of(paths);
    }
    if (!status.ok()) return;
    holder.erase("path");
    holder["sha256"] = std::move(hashes);
  });
  return status;
}

void ResolveModelPaths(json* sweep, const std::string& directory) {
  VisitSweep(*sweep, [&](const std::string&, const std::string& key, json& holder) {
    if (key != "path") return;
    auto resolve = [&](json& path) {
      if (path.is_string() && !path.get<std::string>().empty() &&
          path.get<std::string>().front() != '/') {
        path = (std::filesystem::path(directory) / path.get<std::string>())
                   .lexically_normal()
                   .string();
      }
    };
    json& paths = holder["path"];
    if (paths.is_array()) {
      for (json& path : paths) resolve(path);
    } else {
      resolve(paths);
    }
  });
}

Status CheckSubmittedModels(const json& sweep,
                            const std::function<bool(const std::string&)>& is_stored) {
  for (const ModelFileRef& ref : FindModelFiles(sweep)) {
    if (ref.key == "path") {
      return InvalidArgument(
          ref.field + ": " + ref.value +
          " is a file on the submitting machine, which the coordinator and agents cannot "
          "read; benchfleet submit uploads it and names it by model_args.sha256 (or name a "
          "file on the agents' hosts by model_args.agent_path)");
    }
    if (ref.key == "sha256" && !is_stored(ref.value)) {
      return FailedPrecondition(
          ref.field + ": no model with sha256 " + ref.value +
          " is stored on the coordinator; benchfleet submit uploads the file a sweep "
          "names by model_args.path");
    }
  }
  return Status::Ok();
}

}  // namespace benchfleet
