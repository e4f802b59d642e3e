// m2g discover node: hwloc, libibverbs and NVML (dlopen) into a NodeFacts.
// See probe.hpp for what comes from where.
#include "discover/probe.hpp"

#include <endian.h>
#include <hwloc.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "discover/nvml.hpp"
#include "m2g_config.h"
#include "core/base/enum_names.hpp"
#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/text.hpp"

namespace m2g {

// ---- helpers --------------------------------------------------------------------

std::string normalize_pci_bus_id(const std::string& text)
{
    // [domain:]bus:device.function, hexadecimal, any case.
    unsigned long part[4] = {0, 0, 0, 0};
    int nparts = 0;
    size_t i = 0;
    const size_t n = text.size();
    char seps[4] = {0, 0, 0, 0};
    while (i < n && nparts < 4) {
        size_t start = i;
        unsigned long v = 0;
        while (i < n && std::isxdigit(static_cast<unsigned char>(text[i]))) {
            if (i - start >= 8)
                return "";
            char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
            v = v * 16 + static_cast<unsigned long>(c <= '9' ? c - '0' : c - 'a' + 10);
            ++i;
        }
        if (i == start)
            return "";
        part[nparts] = v;
        seps[nparts] = i < n ? text[i] : '\0';
        ++nparts;
        if (i < n)
            ++i;  // the separator
        else
            break;
    }
    if (i < n && nparts == 4)
        return "";
    unsigned long domain = 0, bus = 0, dev = 0, fn = 0;
    if (nparts == 4 && seps[0] == ':' && seps[1] == ':' && seps[2] == '.' && seps[3] == '\0') {
        domain = part[0], bus = part[1], dev = part[2], fn = part[3];
    } else if (nparts == 3 && seps[0] == ':' && seps[1] == '.' && seps[2] == '\0') {
        bus = part[0], dev = part[1], fn = part[2];
    } else {
        return "";
    }
    if (domain > 0xffffffffUL || bus > 0xff || dev > 0x1f || fn > 7)
        return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", domain, bus, dev, fn);
    return buf;
}

double ib_rate_gbps(unsigned active_width, unsigned active_speed)
{
    double lanes = 0;
    switch (active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: return 0;
    }
    double lane = 0;
    switch (active_speed) {
    case 1: lane = 2.5; break;     // SDR
    case 2: lane = 5; break;       // DDR
    case 4: lane = 10; break;      // QDR
    case 8: lane = 10; break;      // FDR10
    case 16: lane = 14; break;     // FDR
    case 32: lane = 25; break;     // EDR
    case 64: lane = 50; break;     // HDR
    case 128: lane = 100; break;   // NDR
    case 256: lane = 200; break;   // XDR (active_speed_ex)
    default: return 0;
    }
    return lanes * lane;
}

namespace {

// A probe's status from its failures: ok when none, else the first one
// (and how many more).
SourceStatus settled(SourceStatus st, const std::vector<std::string>& failures)
{
    if (failures.empty()) {
        st.ok = true;
    } else {
        st.detail = failures.front();
        if (failures.size() > 1)
            st.detail += " (and " + std::to_string(failures.size() - 1) + " more)";
    }
    return st;
}


// "mlx5_2" < "mlx5_10": digits compare as numbers.

// ---- hwloc ------------------------------------------------------------------------

struct HwlocGpu {
    std::string pci_bus_id;
    std::string name;  // GPUModel of a cuda/nvml/opencl OS device
    std::string uuid;  // NVIDIAUUID of the nvml OS device
    int numa_node = -1;
    std::string closest_nic;
    double nvlink_gbps = -1;
};

struct HwlocNic {
    std::string name;  // OpenFabrics OS device: "mlx5_0"
    std::string pci_bus_id;
    int numa_node = -1;
};

struct HwlocFacts {
    std::vector<HwlocGpu> gpus;
    std::vector<HwlocNic> nics;
};

struct TopologyDeleter {
    void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::string bus_id_of(hwloc_obj_t pcidev)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", pcidev->attr->pcidev.domain, pcidev->attr->pcidev.bus,
                  pcidev->attr->pcidev.dev, pcidev->attr->pcidev.func);
    return buf;
}

bool is_nvidia_gpu(hwloc_obj_t obj)
{
    if (obj->type != HWLOC_OBJ_PCI_DEVICE)
        return false;
    const auto& p = obj->attr->pcidev;
    return p.vendor_id == 0x10de && (p.class_id == 0x0300 || p.class_id == 0x0302);
}

// The NUMA node local to an I/O object: one whose locality is exactly that
// of the object's first non-I/O ancestor (a Package, a Group, the Machine
// on a single-node host). CPU-less NUMA nodes holding GPU memory (subtype
// "GPUMemory", Grace Hopper/Blackwell) share that locality; the CPU's own
// memory is preferred. -1 when the object sits above several NUMA nodes.
int numa_node_of(hwloc_topology_t topo, hwloc_obj_t io)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
    if (!anc || !anc->cpuset)
        return -1;
    hwloc_location loc;
    loc.type = HWLOC_LOCATION_TYPE_CPUSET;
    loc.location.cpuset = anc->cpuset;
    unsigned nr = 0;
    if (hwloc_get_local_numanode_objs(topo, &loc, &nr, nullptr, 0) < 0 || nr == 0)
        return -1;
    std::vector<hwloc_obj_t> nodes(nr);
    if (hwloc_get_local_numanode_objs(topo, &loc, &nr, nodes.data(), 0) < 0 || nr == 0)
        return -1;
    nodes.resize(std::min<size_t>(nr, nodes.size()));
    auto gpu_memory = [](hwloc_obj_t n) { return n->subtype && std::strcmp(n->subtype, "GPUMemory") == 0; };
    hwloc_obj_t best = nullptr;
    for (hwloc_obj_t n : nodes) {
        if (!best || (gpu_memory(best) && !gpu_memory(n)) ||
            (gpu_memory(best) == gpu_memory(n) && n->os_index < best->os_index))
            best = n;
    }
    return best ? static_cast<int>(best->os_index) : -1;
}

int depth_from_root(hwloc_obj_t obj)
{
    int d = 0;
    for (; obj->parent; obj = obj->parent)
        ++d;
    return d;
}

// hwloc_get_common_ancestor_obj() compares depths, which I/O objects do not
// have; walk the parents instead.
hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    std::vector<hwloc_obj_t> chain;
    for (hwloc_obj_t o = a; o; o = o->parent)
        chain.push_back(o);
    for (hwloc_obj_t o = b; o; o = o->parent)
        if (std::find(chain.begin(), chain.end(), o) != chain.end())
            return o;
    return nullptr;
}

// The NVLinkBandwidth matrix hwloc's NVML backend builds (hwloc >= 2.5):
// MB/s between GPUs (their nvml OS devices) and NVSwitches or CPUs. A GPU's
// bandwidth is the sum of its row, the diagonal left out.
void read_nvlink_bandwidth(hwloc_topology_t topo, const std::vector<hwloc_obj_t>& gpu_objs, HwlocFacts& out)
{
    unsigned nr = 0;
    if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, nullptr, 0) < 0 || nr == 0)
        return;
    std::vector<hwloc_distances_s*> dists(nr, nullptr);
    if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, dists.data(), 0) < 0)
        return;
    dists.resize(std::min<size_t>(nr, dists.size()));
    for (hwloc_distances_s* d : dists) {
        if (!d)
            continue;
        if (d->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH) {
            for (unsigned i = 0; i < d->nbobjs; ++i) {
                hwloc_obj_t o = d->objs[i];
                while (o && o->type != HWLOC_OBJ_PCI_DEVICE)
                    o = o->parent;
                auto it = std::find(gpu_objs.begin(), gpu_objs.end(), o);
                if (!o || it == gpu_objs.end())
                    continue;
                double mbps = 0;
                for (unsigned j = 0; j < d->nbobjs; ++j)
                    if (j != i)
                        mbps += static_cast<double>(d->values[i * d->nbobjs + j]);
                HwlocGpu& g = out.gpus[static_cast<size_t>(it - gpu_objs.begin())];
                g.nvlink_gbps = std::max(g.nvlink_gbps, 0.0) + mbps * 8 / 1000;  // MB/s -> Gb/s
            }
        }
        hwloc_distances_release(topo, d);
    }
}

SourceStatus probe_hwloc(const ProbeOptions& o, NodeFacts& f, HwlocFacts& out)
{
    SourceStatus st;
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) < 0) {
        st.detail = std::string("hwloc_topology_init: ") + std::strerror(errno);
        return st;
    }
    TopologyPtr topo(raw);
    // The whole node, not the cgroup this process runs in (a job step).
    hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (!o.hwloc_xml.empty()) {
        if (hwloc_topology_set_xml(raw, o.hwloc_xml.c_str()) < 0 || hwloc_topology_load(raw) < 0)
            throw Error("cannot load hwloc XML '" + o.hwloc_xml + "': " + std::strerror(errno) +
                        " (expected what `lstopo --of xml` writes)");
    } else if (hwloc_topology_load(raw) < 0) {
        st.detail = std::string("hwloc_topology_load: ") + std::strerror(errno);
        return st;
    }

    f.packages = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE);
    f.cores = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE);
    f.pus = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PU);
    f.numa_nodes = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE);
    f.memory_bytes = hwloc_get_root_obj(raw)->total_memory;

    std::vector<hwloc_obj_t> gpu_objs;
    for (hwloc_obj_t p = hwloc_get_next_pcidev(raw, nullptr); p; p = hwloc_get_next_pcidev(raw, p)) {
        if (!is_nvidia_gpu(p))
            continue;
        HwlocGpu g;
        g.pci_bus_id = bus_id_of(p);
        g.numa_node = numa_node_of(raw, p);
        // OS devices hwloc's cuda/nvml/opencl backends hang below the GPU.
        for (hwloc_obj_t c = p->io_first_child; c; c = c->next_sibling) {
            if (c->type != HWLOC_OBJ_OS_DEVICE)
                continue;
            const char* model = hwloc_obj_get_info_by_name(c, "GPUModel");
            const char* uuid = hwloc_obj_get_info_by_name(c, "NVIDIAUUID");
            if (model && *model && g.name.empty())
                g.name = model;
            if (uuid && *uuid && g.uuid.empty())
                g.uuid = uuid;
        }
        gpu_objs.push_back(p);
        out.gpus.push_back(g);
    }

    std::vector<hwloc_obj_t> nic_objs;
    for (hwloc_obj_t d = hwloc_get_next_osdev(raw, nullptr); d; d = hwloc_get_next_osdev(raw, d)) {
        if (d->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !d->name)
            continue;
        HwlocNic n;
        n.name = d->name;
        if (d->parent && d->parent->type == HWLOC_OBJ_PCI_DEVICE)
            n.pci_bus_id = bus_id_of(d->parent);
        n.numa_node = numa_node_of(raw, d);
        nic_objs.push_back(d);
        out.nics.push_back(n);
    }

    // Closest NIC: the deepest common ancestor in the tree (a shared PCIe
    // switch beats a shared host bridge beats a shared package). Ties go to
    // the NIC hwloc lists first (PCI order).
    for (size_t i = 0; i < gpu_objs.size(); ++i) {
        int best_depth = -1;
        for (size_t k = 0; k < nic_objs.size(); ++k) {
            hwloc_obj_t a = common_ancestor(gpu_objs[i], nic_objs[k]);
            int depth = a ? depth_from_root(a) : -1;
            if (depth > best_depth) {
                best_depth = depth;
                out.gpus[i].closest_nic = out.nics[k].name;
            }
        }
    }

    read_nvlink_bandwidth(raw, gpu_objs, out);
    st.ok = true;
    return st;
}

// ---- libibverbs -------------------------------------------------------------------

constexpr auto kPortStateNames =
    enum_names<IBV_PORT_ACTIVE_DEFER>({"nop", "down", "init", "armed", "active", "active_defer"});
const char* port_state_text(ibv_port_state s) { return name_of(kPortStateNames, s, "unknown"); }

std::string guid_text(uint64_t host_order)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(host_order));
    return buf;
}

// GID as ibv_devinfo -v prints it: eight groups of four hex digits. An
// all-zero GID (a RoCE port without an address) is no GID: "".
std::string gid_text(const ibv_gid& gid)
{
    bool zero = true;
    for (unsigned char b : gid.raw)
        zero = zero && b == 0;
    if (zero)
        return "";
    std::string s;
    char buf[8];
    for (int i = 0; i < 16; i += 2) {
        std::snprintf(buf, sizeof buf, "%s%02x%02x", i ? ":" : "", gid.raw[i], gid.raw[i + 1]);
        s += buf;
    }
    return s;
}

SourceStatus probe_ibverbs(NodeFacts& f, const HwlocFacts& hw)
{
    SourceStatus st;
    int num = 0;
    errno = 0;
    ibv_device** list = ibv_get_device_list(&num);
    if (!list) {
        int e = errno;
        // ENOSYS: no uverbs in the kernel, i.e. no RDMA device either.
        st.detail = e == ENOSYS ? "no RDMA devices (the kernel offers no RDMA verbs)"
                                : std::string("ibv_get_device_list: ") + std::strerror(e);
        return st;
    }
    std::unique_ptr<ibv_device*, void (*)(ibv_device**)> guard(list, ibv_free_device_list);
    if (num <= 0) {
        st.detail = "no RDMA devices";
        return st;
    }

    std::vector<std::string> failures;
    for (int i = 0; i < num; ++i) {
        ibv_device* dev = list[i];
        HcaFacts h;
        h.name = ibv_get_device_name(dev) ? ibv_get_device_name(dev) : "";
        for (const HwlocNic& n : hw.nics)
            if (n.name == h.name) {
                h.pci_bus_id = n.pci_bus_id;
                h.numa_node = n.numa_node;
            }
        h.node_guid = guid_text(be64toh(ibv_get_device_guid(dev)));
        ibv_context* ctx = ibv_open_device(dev);
        if (!ctx) {
            failures.push_back(h.name + ": ibv_open_device: " + std::strerror(errno));
            f.hcas.push_back(h);
            continue;
        }
        ibv_device_attr attr;
        std::memset(&attr, 0, sizeof attr);
        int rc = ibv_query_device(ctx, &attr);
        if (rc != 0) {
            failures.push_back(h.name + ": ibv_query_device: " + std::strerror(rc));
        } else {
            h.node_guid = guid_text(be64toh(attr.node_guid));
            for (int port = 1; port <= attr.phys_port_cnt; ++port) {
                ibv_port_attr pa;
                std::memset(&pa, 0, sizeof pa);
                rc = ibv_query_port(ctx, static_cast<uint8_t>(port), &pa);
                if (rc != 0) {
                    failures.push_back(h.name + " port " + std::to_string(port) + ": ibv_query_port: " +
                                       std::strerror(rc));
                    continue;
                }
                PortFacts p;
                p.port = port;
                p.state = port_state_text(pa.state);
                bool ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
                p.link_layer = ethernet ? "ethernet" : "infiniband";
                unsigned speed = pa.active_speed;
#ifdef HAVE_STRUCT_IBV_PORT_ATTR_ACTIVE_SPEED_EX
                if (pa.active_speed_ex)
                    speed = pa.active_speed_ex;
#endif
                if (pa.state != IBV_PORT_DOWN && pa.state != IBV_PORT_NOP)
                    p.rate_gbps = ib_rate_gbps(pa.active_width, speed);
                p.lid = ethernet ? 0 : pa.lid;
                ibv_gid gid;
                if (ibv_query_gid(ctx, static_cast<uint8_t>(port), 0, &gid) == 0)
                    p.gid = gid_text(gid);
                h.ports.push_back(p);
            }
        }
        ibv_close_device(ctx);
        f.hcas.push_back(h);
    }
    std::sort(f.hcas.begin(), f.hcas.end(),
              [](const HcaFacts& a, const HcaFacts& b) { return natural_less(a.name, b.name); });
    return settled(st, failures);
}

// ---- NVML -------------------------------------------------------------------------
//
// The entry points come from the shared loader (discover/nvml.hpp), declared
// from NVIDIA's public NVML API reference, not from nvml.h.

using nvml::kFabricCompleted;
using nvml::kFabricInProgress;
using nvml::kFabricNotStarted;
using nvml::kFabricNotSupported;

std::string uuid_text(const unsigned char u[16])
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                  u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return buf;
}

const char* fabric_state_text(unsigned char s)
{
    switch (s) {
    case kFabricNotSupported: return "not_supported";
    case kFabricNotStarted: return "not_started";
    case kFabricInProgress: return "in_progress";
    case kFabricCompleted: return "completed";
    }
    return "unknown";
}

void probe_nvml_gpu(const Nvml& nv, nvml::Device dev, GpuFacts& g)
{
    char buf[nvml::kDeviceNameV2BufferSize] = {0};
    if (nv.name(dev, buf, sizeof buf) == nvml::kSuccess)
        g.name = buf;
    char ubuf[nvml::kDeviceUuidV2BufferSize] = {0};
    if (nv.uuid(dev, ubuf, sizeof ubuf) == nvml::kSuccess)
        g.uuid = ubuf;

    if (nv.fabric) {
        nvml::GpuFabricInfo fi;
        std::memset(&fi, 0, sizeof fi);
        nvml::Return r = nv.fabric(dev, &fi);
        if (r == nvml::kSuccess) {
            g.fabric_known = true;
            g.fabric_state = fabric_state_text(fi.state);
            if (fi.state == kFabricCompleted) {
                g.fabric_status = fi.status == nvml::kSuccess ? "success" : nv.text(fi.status);
                bool zero = std::all_of(fi.clusterUuid, fi.clusterUuid + 16, [](unsigned char c) { return c == 0; });
                if (!zero)
                    g.cluster_uuid = uuid_text(fi.clusterUuid);
                g.clique_id = fi.cliqueId;
            }
        } else if (r == nvml::kErrorNotSupported) {
            g.fabric_state = "not_supported";
        } else {
            g.fabric_status = nv.text(r);
        }
    }

    if (nv.nvlink_state) {
        int answered = 0, active = 0;
        bool other_error = false;
        for (unsigned link = 0; link < nvml::kNvlinkMaxLinks; ++link) {
            int state = 0;
            nvml::Return r = nv.nvlink_state(dev, link, &state);
            if (r == nvml::kSuccess) {
                ++answered;
                if (state == nvml::kFeatureEnabled)
                    ++active;
            } else if (r != nvml::kErrorNotSupported && r != nvml::kErrorInvalidArgument) {
                other_error = true;
            }
        }
        // No link answering because the GPU has none (NOT_SUPPORTED) is a
        // known zero; because NVML failed otherwise, unknown.
        if (answered > 0 || !other_error) {
            g.nvlinks = answered;
            g.nvlinks_active = active;
        }
    }
}

// NVML's GPUs in index order, and f.driver_version.
SourceStatus probe_nvml(const ProbeOptions& o, NodeFacts& f, std::vector<GpuFacts>& gpus)
{
    SourceStatus st;
    std::string path = o.nvml_library;
    if (path.empty()) {
        const char* env = std::getenv(kEnvNvmlLibrary);
        path = env && *env ? env : kDefaultNvmlLibrary;
    }
    const Nvml nv(path, {Nvml::kInit, Nvml::kShutdown, Nvml::kErrorString, Nvml::kDriverVersion, Nvml::kCount,
                         Nvml::kHandle, Nvml::kName, Nvml::kUuid, Nvml::kPciInfo});
    if (!nv.ok()) {
        st.detail = nv.error();
        return st;
    }
    // Optional: older drivers have no fabric call (nv.fabric, nv.nvlink_state null).
    const NvmlSession session(nv);
    nvml::Return r = session.init_result();
    if (r != nvml::kSuccess) {
        st.detail = "nvmlInit_v2: " + nv.text(r);
        return st;
    }

    char version[nvml::kSystemDriverVersionBufferSize] = {0};
    if (nv.driver_version(version, sizeof version) == nvml::kSuccess)
        f.driver_version = version;

    unsigned count = 0;
    r = nv.count(&count);
    if (r != nvml::kSuccess) {
        st.detail = "nvmlDeviceGetCount_v2: " + nv.text(r);
        return st;
    }
    if (count == 0) {
        st.detail = "NVML reports no GPU";
        return st;
    }
    std::vector<std::string> failures;
    for (unsigned i = 0; i < count; ++i) {
        nvml::Device dev = nullptr;
        r = nv.handle(i, &dev);
        if (r != nvml::kSuccess) {
            failures.push_back("GPU " + std::to_string(i) + ": nvmlDeviceGetHandleByIndex_v2: " + nv.text(r));
            continue;
        }
        GpuFacts g;
        g.index = static_cast<int>(i);
        nvml::PciInfo pci;
        std::memset(&pci, 0, sizeof pci);
        r = nv.pci(dev, &pci);
        if (r == nvml::kSuccess) {
            pci.busId[sizeof pci.busId - 1] = '\0';
            g.pci_bus_id = normalize_pci_bus_id(pci.busId);
        } else {
            failures.push_back("GPU " + std::to_string(i) + ": nvmlDeviceGetPciInfo_v3: " + nv.text(r));
        }
        probe_nvml_gpu(nv, dev, g);
        gpus.push_back(g);
    }
    return settled(st, failures);
}

void join_hwloc(GpuFacts& g, const HwlocGpu& h)
{
    if (g.pci_bus_id.empty())
        g.pci_bus_id = h.pci_bus_id;
    if (g.name.empty())
        g.name = h.name;
    if (g.uuid.empty())
        g.uuid = h.uuid;
    g.numa_node = h.numa_node;
    g.closest_nic = h.closest_nic;
    g.nvlink_gbps = h.nvlink_gbps;
}

}  // namespace

NodeFacts probe_node(const ProbeOptions& o)
{
    NodeFacts f;
    f.hostname = short_hostname();
    f.generated_at = static_cast<int64_t>(std::time(nullptr));

    HwlocFacts hw;
    f.hwloc = probe_hwloc(o, f, hw);

    if (o.ibverbs)
        f.ibverbs = probe_ibverbs(f, hw);
    else
        f.ibverbs.detail = "not probed";

    std::vector<GpuFacts> nvml_gpus;
    f.nvml = probe_nvml(o, f, nvml_gpus);

    // Join on the PCI bus id; on the UUID (hwloc's nvml OS devices) when
    // NVML could not say where a GPU sits.
    std::vector<bool> used(hw.gpus.size(), false);
    auto join = [&](GpuFacts& g, auto same) {
        for (size_t k = 0; k < hw.gpus.size(); ++k)
            if (!used[k] && same(g, hw.gpus[k])) {
                join_hwloc(g, hw.gpus[k]);
                used[k] = true;
                return true;
            }
        return false;
    };
    for (GpuFacts& g : nvml_gpus) {
        bool joined = !g.pci_bus_id.empty() &&
                      join(g, [](const GpuFacts& a, const HwlocGpu& b) { return a.pci_bus_id == b.pci_bus_id; });
        if (!joined && g.pci_bus_id.empty() && !g.uuid.empty())
            join(g, [](const GpuFacts& a, const HwlocGpu& b) { return a.uuid == b.uuid; });
        f.gpus.push_back(g);
    }
    int next = 0;
    for (size_t k = 0; k < hw.gpus.size(); ++k) {
        if (used[k])
            continue;
        GpuFacts g;
        g.index = nvml_gpus.empty() ? next++ : -1;
        join_hwloc(g, hw.gpus[k]);
        f.gpus.push_back(g);
    }
    return f;
}

}  // namespace m2g
