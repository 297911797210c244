// Prints the gzip size of every JavaScript file in dist/assets and the
// total; with --check it exits 1 when the total is over the budget.
import { readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET = 200 * 1024;
const dir = `${process.env.DROVER_WEB_OUT ?? 'dist'}/assets`;
let total = 0;
const rows = [];
for (const f of readdirSync(dir).sort()) {
  if (!f.endsWith('.js') && !f.endsWith('.css')) continue;
  const raw = readFileSync(`${dir}/${f}`);
  const gz = gzipSync(raw, { level: 9 }).length;
  if (f.endsWith('.js')) total += gz;
  rows.push(`${(gz / 1024).toFixed(1).padStart(7)} KB gzip  ${(raw.length / 1024).toFixed(1).padStart(7)} KB  ${f}`);
}
console.log(rows.join('\n'));
console.log(`JavaScript total: ${(total / 1024).toFixed(1)} KB gzip (budget ${BUDGET / 1024} KB)`);
if (process.argv.includes('--check') && total > BUDGET) {
  console.error('over budget');
  process.exit(1);
}
