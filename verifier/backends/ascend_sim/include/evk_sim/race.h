// Cross-core race detection on global memory (happens-before with vector clocks). Included by runtime.cpp
// only; the kernel never sees it.
//
// The emulator runs the cores (blocks; in a MIX kernel each AIC and AIV) one after another as fibers, so a core
// that reads GM bytes another core wrote sees the new data even when nothing orders the two; on the NPU the
// cores run at the same time and the reader may see the old bytes. Every core keeps a vector clock; its own
// entry (its epoch) ticks at each CrossCoreSetFlag and SyncAll. Two accesses of a byte by different cores, at
// least one a write, race unless a chain of synchronisations orders the first before the second:
//   CrossCoreSetFlag -> the CrossCoreWaitFlag that consumes its increment (the waiter joins the setter's clock
//     as of the set; a tally that needs several setters carries the join of all of them);
//   SyncAll: every participant gets the join of all participants' clocks.
//
// Writes. A kernel write of a GM byte records (writer core, writer epoch, write site, atomic?) in one 64-bit
// word per byte of the allocation. A later read or write of that byte by another core c is ordered after the
// write only if c's clock has caught up with the writer's epoch. Writes while SetAtomicAdd (etc.) is on do not
// race with each other; a plain access does race with them. When unordered atomic writes of several cores meet
// in one byte, its record names an accumulation group instead of a core: the join of the contributors'
// clocks, so a later access must be ordered after all of them. Only the last writer of a byte is kept (an
// unordered write after it is itself reported).
//
// Reads (FastTrack-style). A kernel read records, in one 32-bit id per byte, the reads of that byte since its
// last write that are not ordered before one another: an id names a read set, one (core, epoch, read site)
// word per core, sorted by core; mostly a single read. A read by core c drops the entries ordered before it
// (c's clock has caught up with them: a write ordered after c's read is ordered after them too) and c's own
// older entry, then adds its own; read sets are hash-consed (one id per distinct set) and the transition
// (set, read) -> set is memoised, so the bytes of a copy mostly share one id and many cores reading the same
// bytes make a handful of sets. A write by core w races with every entry of another core that w's clock has
// not caught up with (write after read: on the NPU the reader may see the new data); a plain write then clears
// the byte's reads (an atomic add keeps them for the other cores' unordered adds). This also catches a racy
// reader the emulator happened to run BEFORE its writer (block 0 reading block 1's part before block 1 ran):
// block 1's write then meets block 0's unordered read.
// Bytes the host initialised have no writer. Inputs and the tiling (read-only by contract; writing one is
// input_written) are not read-tracked until the kernel writes them, so host data read by many cores costs
// nothing; outputs, in/outs and the workspace are.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
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

// What one access found: the bytes whose last write (raw: read/write after write) or an earlier read (war:
// write after read) is not ordered before it.
struct Finding {
    uint64_t bytes = 0;  // unordered bytes
    uint64_t first = 0;  // offset (in the allocation) of the first
    uint64_t rec = 0;    // its record (raw: writer, epoch, site, atomic; war: reader, epoch, read site)
    int who = -1;        // an unordered writer or reader (a core)
};
struct Findings {
    Finding raw, war;
};

// The read sets (see the header comment): id 0 no read; id i >= 1 sets[i - 1].
struct ReadSets {
    static constexpr uint32_t kMaxSets = 1u << 24;  // past this, reads stop being recorded (can only hide races)
    std::vector<std::vector<uint64_t>> sets;
    std::map<std::vector<uint64_t>, uint32_t> ids;
    std::unordered_map<uint64_t, uint32_t> memo;  // (set id << 32 | read id) -> the set after that read
    uint64_t last_word = 0;
    uint32_t last_id = 0;
    size_t widest = 0;     // the most cores in one set
    bool saturated = false;

    uint32_t intern(std::vector<uint64_t>&& v) {
        auto it = ids.find(v);
        if (it != ids.end()) return it->second;
        if (sets.size() >= kMaxSets) {
            saturated = true;
            return 0;
        }
        if (v.size() > widest) widest = v.size();
        sets.push_back(v);
        const uint32_t id = static_cast<uint32_t>(sets.size());
        ids.emplace(std::move(v), id);
        return id;
    }
    // the id of the set holding one read (word: core, epoch, site)
    uint32_t single(uint64_t word) {
        if (word == last_word && last_id) return last_id;
        last_word = word;
        last_id = intern(std::vector<uint64_t>{word});
        return last_id;
    }
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
    ReadSets reads;
    std::set<std::pair<std::string, uint32_t>> reported;  // (access file:line, other site; "R " prefix: war)
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
    // what the detector took, for the report (JSON object; record bytes summed over the allocations by the caller)
    std::string stats_json(uint64_t write_record_bytes, uint64_t read_record_bytes) const {
        char b[320];
        std::snprintf(b, sizeof(b),
                      "{\"cores\":%zu,\"write_record_bytes\":%llu,\"read_record_bytes\":%llu,\"read_sets\":%zu,"
                      "\"widest_read_set\":%zu,\"read_sets_saturated\":%s,\"accumulation_groups\":%zu}",
                      vc.size(), static_cast<unsigned long long>(write_record_bytes),
                      static_cast<unsigned long long>(read_record_bytes), reads.sets.size(), reads.widest,
                      reads.saturated ? "true" : "false", groups.size());
        return b;
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
    // core c's read `word` (its set: `mine`) of a byte whose reads were the set `x`: the set after it
    uint32_t read_join(uint32_t x, uint64_t word, uint32_t mine, int c, const Clock& k) {
        if (!x) return mine;
        const uint64_t key = (static_cast<uint64_t>(x) << 32) | mine;
        auto it = reads.memo.find(key);
        if (it != reads.memo.end()) return it->second;
        const uint32_t ksz = static_cast<uint32_t>(k.size());
        std::vector<uint64_t> v;
        bool placed = false;
        for (uint64_t e : reads.sets[x - 1]) {
            const int d = rec_core(e);
            if (d == c) continue;                                                   // c's older read
            if (rec_epoch(e) <= (static_cast<uint32_t>(d) < ksz ? k[d] : 0)) continue;  // ordered before c's read
            if (!placed && d > c) {
                v.push_back(word);
                placed = true;
            }
            v.push_back(e);
        }
        if (!placed) v.push_back(word);
        const uint32_t id = v.size() == 1 ? mine : reads.intern(std::move(v));
        reads.memo.emplace(key, id);
        return id;
    }
    // the first read of set x that core c's write (clock k) is not ordered after, or 0
    uint64_t unordered_read(uint32_t x, int c, const Clock& k) const {
        const uint32_t ksz = static_cast<uint32_t>(k.size());
        for (uint64_t e : reads.sets[x - 1]) {
            const int d = rec_core(e);
            if (d != c && rec_epoch(e) > (static_cast<uint32_t>(d) < ksz ? k[d] : 0)) return e;
        }
        return 0;
    }
    // Checks (and records) bytes [start, start + n) of an allocation's records: `recs` its last writes (null:
    // nothing written yet and this is a read), `rds` its read sets (null: reads not tracked here). `skip_waw`:
    // an unordered write-after-write by a core other than the AIC/AIV partner is left to block_write_overlap.
    Findings access(uint64_t* recs, uint32_t* rds, uint64_t start, uint64_t n, bool write, bool atomic,
                    bool skip_waw, const char* file, int line) {
        Findings out;
        Finding& f = out.raw;
        const int me = cur;
        const Clock& k = vc[me];
        const uint32_t site_id = site(file, line);
        const uint64_t word = (static_cast<uint64_t>(me + 1) << 47) | (static_cast<uint64_t>(epoch[me]) << 24) | site_id;
        const uint64_t mine = write ? (atomic ? kAtomicBit : 0) | word : 0;
        if (recs) {
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
        }
        if (!rds) return out;
        uint32_t* q = rds + start;
        if (write) {  // write after read: every unordered read of another core. A plain write clears the reads
            // (a later access must be ordered after it, or is reported against it); an atomic add keeps them (the
            // unordered adds of other cores that follow must be checked against them too)
            Finding& w = out.war;
            uint32_t prev = 0;
            uint64_t bad = 0;
            for (uint64_t i = 0; i < n; ++i) {
                const uint32_t y = q[i];
                if (!y) continue;
                if (y != prev) {
                    prev = y;
                    bad = unordered_read(y, me, k);
                    if (bad && !w.bytes) {
                        w.rec = bad;
                        w.who = rec_core(bad);
                    }
                }
                if (bad && !w.bytes++) w.first = start + i;
                if (!atomic) q[i] = 0;
            }
            return out;
        }
        const uint32_t mid = reads.single(word);
        if (!mid) return out;
        uint32_t prev = mid, prev_new = mid;
        for (uint64_t i = 0; i < n; ++i) {
            const uint32_t y = q[i];
            if (y == mid) continue;
            if (y != prev) {
                prev = y;
                prev_new = read_join(y, word, mid, me, k);
            }
            q[i] = prev_new;
        }
        return out;
    }
};

}  // namespace race
}  // namespace evk_sim
