// Summarizes the flushes of one run from strace's output:
// node flushes.mjs TRACE FILES SECONDS LABEL prints table rows, one per file
// flushed: how many flushes per call, how many calls share one (a group
// commit's size), their mean and 90th percentile in ms, and their share of
// the run's wall time. TRACE is written by
// strace --seccomp-bpf -f -T -y -e trace=fsync,fdatasync (run.sh, BENCH_STRACE).
import { readFileSync } from "node:fs";

const [trace, files, seconds, label] = process.argv.slice(2);
const calls = Number(files);
const byFile = new Map();
const unfinished = new Map(); // pid -> the call it is in, while another thread's call is printed
for (const line of readFileSync(trace, "utf8").split("\n")) {
  // 1234 fdatasync(7</tmp/x/depot.db>) = 0 <0.003210>, or when two threads
  // flush at once, 1234 fdatasync(7</tmp/x/depot.db> <unfinished ...>
  // then 1234 <... fdatasync resumed>) = 0 <0.003210>.
  let m = line.match(/^(\d+)\s+(?:[\d:.]+\s+)?(fsync|fdatasync)\(\d+<([^>]*)>\s*<unfinished/);
  if (m) {
    unfinished.set(m[1], [m[2], m[3]]);
    continue;
  }
  let call, path, ms;
  if ((m = line.match(/^(\d+)\s+(?:[\d:.]+\s+)?<\.\.\. (fsync|fdatasync) resumed>\)\s*=\s*0\s*<([\d.]+)>/)) && unfinished.has(m[1])) {
    [call, path] = unfinished.get(m[1]);
    unfinished.delete(m[1]);
    ms = Number(m[3]) * 1000;
  } else if ((m = line.match(/^\d+\s+(?:[\d:.]+\s+)?(fsync|fdatasync)\(\d+<([^>]*)>\)\s*=\s*0\s*<([\d.]+)>/))) {
    [call, path, ms] = [m[1], m[2], Number(m[3]) * 1000];
  } else {
    continue;
  }
  const key = `${call} ${path.split("/").pop()}`;
  if (!byFile.has(key)) byFile.set(key, []);
  byFile.get(key).push(ms);
}
const ms = (x) => x.toFixed(2);
for (const [key, d] of [...byFile].sort((a, b) => b[1].length - a[1].length)) {
  // Files flushed once at start (the key, a fresh checkpoint, directories)
  // are not the per-call path.
  if (d.length < 10) continue;
  d.sort((a, b) => a - b);
  const sum = d.reduce((a, b) => a + b, 0);
  console.log(`| ${label} | ${key} | ${(d.length / calls).toFixed(3)} | ${(calls / d.length).toFixed(1)} | ${ms(sum / d.length)} | ${ms(d[Math.floor(d.length * 0.9)])} | ${((sum / 1000 / Number(seconds)) * 100).toFixed(0)}% |`);
}
