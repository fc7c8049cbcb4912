// Preloaded (--import) into a measured process: writes its peak RSS in KiB to the file named by
// DUS_BENCH_RSS_FILE when it exits. Portable where GNU time (/usr/bin/time -f %M) is missing.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  const file = process.env.DUS_BENCH_RSS_FILE;
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
