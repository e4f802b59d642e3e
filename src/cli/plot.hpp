// m2g CLI: `m2g status --plot FILE.png` — a rack map of the cluster drawn
// with cairo, coloured by use, health and power headroom.
//
// The image
//   Always kPlotWidth x kPlotHeight pixels (1600 x 900), whatever the size of
//   the cluster: the layout scales into it. Format: PNG, 8-bit RGB without
//   alpha (IHDR colour type 2). A test reads the size from the IHDR chunk:
//   big-endian width at bytes 16-19 and height at 20-23 of the file.
//   It is never a single colour: the background is white (#ffffff) and the
//   header (cluster name, time, GPU counts) is always drawn in dark text,
//   also for a model without NVLink domains or a Status with no domains;
//   any rendered cluster adds the palette colours of the map and legend.
//
//   ┌ header: cluster, time, GPUs used/free/degraded, fragmentation, feed ──┐
//   │ power (site, rows), active DR events, attention (faults, hottest)     │
//   ├───────────────────────────────────────────────────────────────────────┤
//   │ rack map: detailed (<= kPlotDetailMaxRacks racks) or compact (more)   │
//   ├───────────────────────────────────────────────────────────────────────┤
//   │ legend: every colour, outline and badge used in the map               │
//   └───────────────────────────────────────────────────────────────────────┘
//
// Detailed mode (at most kPlotDetailMaxRacks NVLink domains): each rack is a
// column of node cells, racks grouped under their parent switch (labelled),
// wrapped into up to a few bands. Cell colour: free / partly used / full
// (per node, from the ClusterView) or the rack's used share (without one);
// hatched = degraded (health feed), grey = drained, dark grey = down; a
// purple stripe marks a node in a maintenance window now. A red outline
// marks an NVLink fault, a MAINT badge an active maintenance window. Under
// each rack a power bar: draw / effective budget, green < 75 %, amber
// 75–90 %, red >= 90 %, grey when unknown, the DR-curtailed part of the
// nominal budget hatched; with the kW numbers. Over each rack its name and
// hottest GPU temperature, coloured by thermal state.
//
// Compact mode (more racks, e.g. 1,389): one cell per rack, coloured by used
// share, the degraded share hatched from the right, a red outline for an
// NVLink fault, a purple corner for maintenance and a strip at the bottom for
// power; one line of cells per group of switches, labelled with the first
// switch. Nodes outside NVLink domains are counted in the header only.
//
// Text is cairo's toy API, "sans-serif", never smaller than 11 px.
#pragma once

#include <string>

#include "core/model/model.hpp"
#include "tools/reports/status.hpp"

namespace m2g {

inline constexpr int kPlotWidth = 1600;   // px, every image
inline constexpr int kPlotHeight = 900;   // px, every image
inline constexpr int kPlotDetailMaxRacks = 32;  // more NVLink domains: compact mode

// Draw `s` (computed for `m`) as a PNG at `path`. `nodes`, when given, must
// hold one NodeView per model node: cells then show each node's own use and
// Slurm state; without it (nullptr) cells are shaded by their rack's used
// share and health comes from the signals snapshot in `s`. Throws m2g::Error
// naming `path` (and the system's or cairo's reason) when the image cannot be
// drawn or written; a failed write leaves no file behind.
void plot_status_png(const Model& m, const Status& s, const ClusterView* nodes, const std::string& path);
void plot_status_png(const Model& m, const Status& s, const std::string& path);

}  // namespace m2g
