// Cross-core race detection on global memory (happens-before with vector clocks). Included by runtime.cpp
// only; the kernel never sees it.
//
// The emulator runs the cores (blocks; in a MIX kernel each AIC and AIV) one after another as fibers, so a core
// that reads GM bytes another core wrote sees the new data even when nothing orders the two; on the NPU the
// cores run at the same time and the reader may see the old bytes. Every core keeps a vector clock; its own
// entry (its epoch) ticks at each CrossCoreSetFlag and SyncAll. A kernel write of a GM byte records
// (writer core, writer epoch, write site, atomic?) in one 64-bit word per byte of the allocation. A later read
// or write of that byte by another core c is ordered after the write only if c's clock has caught up with the
// writer's epoch, which happens through the synchronisation edges:
//   CrossCoreSetFlag -> the CrossCoreWaitFlag that consumes its increment (the waiter joins the setter's clock
//     as of the set; a tally that needs several setters carries the join of all of them);
//   SyncAll: every participant gets the join of all participants' clocks.
// Writes while SetAtomicAdd (etc.) is on do not race with each other; a plain access does race with them. When
// unordered atomic writes of several cores meet in one byte, its record names an accumulation group instead
// of a core: the join of the contributors' clocks, so a later access must be ordered after all of them.
// Bytes the host initialised (inputs, zero-filled outputs, tiling) have no writer. Only the LAST writer of a
// byte is kept, and reads are not recorded: a read followed by another core's unordered write (write after
// read) is not detected.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace evk_sim {
namespace race {

using Clock = std::vector<uint32_t>;

// record layout: bit 63 atomic | bits 47..62 core + 1 | bits 24..46 epoch | bits 0..23 write site
constexpr uint64_t kAtomicBit = 1ull << 63;
constexpr uint32_t kMaxCores = 0xfffe;
constexpr uint32_t kMaxEpoch = 0x7fffff;
constexpr uint32_t kMaxSite = 0xffffff;
constexpr int kGroup = 0xfffe;  // rec_core of an accumulation group (its epoch field: the group's index)
inline int rec_core(uint64_t x) { return static_cast<int>((x >> 47) & 0xffff) - 1; }
inline uint32_t rec_epoch(uint64_t x) { return static_cast<uint32_t>((x >> 24) & kMaxEpoch); }
inline uint32_t rec_site(uint64_t x) { return static_cast<uint32_t>(x & kMaxSite); }

inline void join(Clock& dst, const Clock& src) {
    if (dst.size() < src.size()) dst.resize(src.size(), 0);
    for (size_t i = 0; i < src.size(); ++i)
        if (src[i] > dst[i]) dst[i] = src[i];
}

// What one access found: the bytes whose last write is not ordered before it.
struct Finding {
    uint64_t bytes = 0;  // unordered bytes
    uint64_t first = 0;  // offset (in the allocation) of the first
    uint64_t rec = 0;    // its record (writer, epoch, site, atomic)
    int who = -1;        // an unordered writer (a core)
};

struct State {
    bool on = false;
    int cur = -1;                        // the core (fiber) running
    std::vector<Clock> vc;               // per core: its clock of the others (empty: all zero)
    std::vector<uint32_t> epoch;         // per core: its own entry
    std::vector<int> aicore, role;       // per core: its AI core (-1 not MIX) and role (1 AIC, 0 AIV)
    std::vector<std::string> name;       // per core: how messages name it
    std::vector<std::deque<Clock>> flagq;  // per core * 16 flags: the clock each pending increment carries
    std::map<std::pair<int, int>, Clock> tally;  // (tally kind/owner, flag) -> join of its setters so far
    std::vector<Clock> groups;           // accumulation groups: the join of their contributors' clocks
    std::vector<std::pair<const char*, int>> sites;
    std::map<std::pair<const char*, int>, uint32_t> site_ids;
    std::set<std::pair<std::string, uint32_t>> reported;  // (access file:line, write site)
    const char* last_file = nullptr;
    int last_line = -1;
    uint32_t last_site = 0;

    void reset(int cores) {
        *this = State();
        on = cores > 1 && cores <= static_cast<int>(kMaxCores);
        if (!on) return;
        vc.assign(cores, Clock());
        epoch.assign(cores, 1);
        aicore.assign(cores, -1);
        role.assign(cores, 0);
        name.assign(cores, std::string());
        flagq.assign(static_cast<size_t>(cores) * 16, std::deque<Clock>());
        sites.emplace_back(nullptr, 0);  // site 0: unknown
    }
    // the core's clock with its own epoch filled in (what a release hands on)
    Clock snapshot(int c) const {
        Clock k = vc[c];
        if (k.size() < vc.size()) k.resize(vc.size(), 0);
        k[c] = epoch[c];
        return k;
    }
    void tick(int c) {
        if (epoch[c] < kMaxEpoch) ++epoch[c];
    }
    uint32_t site(const char* file, int line) {
        if (file == last_file && line == last_line) return last_site;
        auto it = site_ids.find({file, line});
        uint32_t id;
        if (it != site_ids.end()) {
            id = it->second;
        } else if (sites.size() <= kMaxSite) {
            id = static_cast<uint32_t>(sites.size());
            sites.emplace_back(file, line);
            site_ids[{file, line}] = id;
        } else {
            id = 0;
        }
        last_file = file;
        last_line = line;
        last_site = id;
        return id;
    }
    // CrossCoreSetFlag by core c: its clock goes into the tally `key` (or straight to the receivers).
    void set_into(std::pair<int, int> key, int c) { join(tally[key], snapshot(c)); }
    // a receiver's counter went up by one, carrying `k`
    void deliver(int receiver, int flag, const Clock& k) { flagq[static_cast<size_t>(receiver) * 16 + flag].push_back(k); }
    // the tally released (remaining: its count after the release; a remainder keeps the joined clock, which
    // can only hide a race, never invent one)
    Clock take_tally(std::pair<int, int> key, int remaining) {
        Clock k = tally[key];
        if (remaining <= 0) tally.erase(key);
        return k;
    }
    // CrossCoreWaitFlag by core c consumed one increment of `flag`
    void acquire(int c, int flag) {
        auto& q = flagq[static_cast<size_t>(c) * 16 + flag];
        if (q.empty()) return;
        join(vc[c], q.front());
        q.pop_front();
    }
    // SyncAll released `cores`
    void barrier(const std::vector<int>& cores) {
        Clock all;
        for (int c : cores) join(all, snapshot(c));
        for (int c : cores) {
            vc[c] = all;
            tick(c);
        }
    }
    // the AIC and an AIV of one AI core (block_write_overlap lets them rewrite each other's output bytes)
    // is the write recorded in x ordered before core c (clock k)? `who`: an unordered writer
    bool ordered(uint64_t x, int c, const Clock& k, int* who) const {
        const int w = rec_core(x);
        const uint32_t ksz = static_cast<uint32_t>(k.size());
        if (w == kGroup) {
            const Clock& g = groups[rec_epoch(x)];
            for (size_t i = 0; i < g.size(); ++i)
                if (static_cast<int>(i) != c && g[i] > (i < ksz ? k[i] : 0)) {
                    if (who) *who = static_cast<int>(i);
                    return false;
                }
            return true;
        }
        if (w == c) return true;
        if (rec_epoch(x) <= (static_cast<uint32_t>(w) < ksz ? k[w] : 0)) return true;
        if (who) *who = w;
        return false;
    }
    // core c's atomic write over the unordered atomic write x: the record of the accumulation group of both
    uint64_t merge_atomic(uint64_t x, int c, uint32_t site_id) {
        if (groups.size() > kMaxEpoch) return 0;
        Clock g = rec_core(x) == kGroup ? groups[rec_epoch(x)] : Clock();
        if (rec_core(x) != kGroup) {
            g.assign(vc.size(), 0);
            g[rec_core(x)] = rec_epoch(x);
        }
        join(g, snapshot(c));
        groups.push_back(std::move(g));
        return kAtomicBit | (static_cast<uint64_t>(kGroup + 1) << 47) |
               (static_cast<uint64_t>(groups.size() - 1) << 24) | site_id;
    }
    bool same_ai_core_pair(int a, int b) const {
        if (a == kGroup || b == kGroup) return false;
        return aicore[a] >= 0 && aicore[a] == aicore[b] && (role[a] == 1 || role[b] == 1);
    }
    // Checks (and for a write records) bytes [start, start + n) of an allocation's record array. `skip_waw`:
    // an unordered write-after-write by a core other than the AIC/AIV partner is left to block_write_overlap.
    Finding access(uint64_t* recs, uint64_t start, uint64_t n, bool write, bool atomic, bool skip_waw,
                   const char* file, int line) {
        Finding f;
        const int me = cur;
        const Clock& k = vc[me];
        uint64_t mine = 0;
        const uint32_t site_id = write ? site(file, line) : 0;
        if (write)
            mine = (atomic ? kAtomicBit : 0) | (static_cast<uint64_t>(me + 1) << 47) |
                   (static_cast<uint64_t>(epoch[me]) << 24) | site_id;
        uint64_t* r = recs + start;
        uint64_t prev = ~0ull, prev_new = mine;  // a copy's bytes mostly share one record: decide it once
        bool prev_bad = false;
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t x = r[i];
            if (x && x != mine) {
                if (x != prev) {
                    prev = x;
                    prev_new = mine;
                    int who = -1;
                    prev_bad = !ordered(x, me, k, &who);
                    if (prev_bad && write && atomic && (x & kAtomicBit)) {  // atomics accumulate: no race
                        prev_bad = false;
                        const uint64_t g = merge_atomic(x, me, site_id);
                        if (g) prev_new = g;
                    } else if (prev_bad && write && skip_waw && !same_ai_core_pair(who, me)) {
                        prev_bad = false;  // block_write_overlap reports it
                    }
                    if (prev_bad && !f.bytes) f.who = who;
                }
                if (prev_bad && !f.bytes++) {
                    f.first = start + i;
                    f.rec = x;
                }
                if (write) r[i] = prev_new;
            } else if (write) {
                r[i] = mine;
            }
        }
        return f;
    }
};

}  // namespace race
}  // namespace evk_sim
