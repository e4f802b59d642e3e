// m2g core: jobs from slurm-bridge — the bridge-intents.json document.
//
// m2g-slinky resolves each slurm-bridge pod's annotations into the M2G_*
// variables spank_m2g would have put into the job (the same parser, the
// recipe catalog, now+N counted from the pod's creation), and publishes
// them keyed "namespace/pod" (tools/formats/slinky.hpp writes it);
// job_submit/m2g finds a slurm-bridge job's pods in its AdminComment and
// applies them. doc/slinky.md has the format.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace m2g {

struct BridgeIntent {
    std::vector<std::pair<std::string, std::string>> env;  // encode_intent(); empty: m2g's defaults
    std::string error;                                     // non-empty: the annotations are refused
};

struct BridgeIntents {
    int64_t generated_at = 0;
    std::map<std::string, BridgeIntent> pods;  // "namespace/pod"
};

// Parse bridge-intents.json; throws ParseError naming `what` and the path.
BridgeIntents parse_bridge_intents(const std::string& text, const std::string& what);

// The pods of a slurm-bridge AdminComment ({"pods": ["ns/pod", ...]}), or
// nothing when `admin_comment` is not one.
std::vector<std::string> bridge_pods(const std::string& admin_comment);

// bridge-intents.json as job_submit/m2g reads it: the document in force,
// read again when the file changes (device, inode, size, mtime); a file
// that cannot be read or parsed keeps the last good document, and says so
// through `log` once per change of the file, not once per job.
class BridgeIntentsFile {
  public:
    // The document at `path` now (null: none readable yet). `log` gets the
    // reason a change was refused (may be null).
    std::shared_ptr<const BridgeIntents> get(const std::string& path,
                                             const std::function<void(const std::string&)>& log);

  private:
    std::mutex mu_;
    std::string path_;
    std::string stamp_;  // dev:ino:size:mtime of what was last read
    std::shared_ptr<const BridgeIntents> doc_;
};

struct BridgeResolution {
    BridgeIntent intent;                // what to apply (env), or why to refuse (error)
    std::vector<std::string> unknown;  // pods the document does not list (not seen yet)
};

// The one intent of a job's pods: the pods the document knows must agree
// (same variables); a pod whose annotations were refused refuses the job.
BridgeResolution resolve_bridge_intent(const BridgeIntents& doc, const std::vector<std::string>& pods);

}  // namespace m2g
