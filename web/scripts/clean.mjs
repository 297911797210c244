// Removes what vite build writes into dist, keeping files other helpers own
// there (dist/source.sha256, dist/*.go): the build then leaves no stale
// hashed chunks behind.
import { rmSync, existsSync } from 'node:fs';

for (const p of ['dist/assets', 'dist/index.html']) {
  if (existsSync(p)) rmSync(p, { recursive: true, force: true });
}
