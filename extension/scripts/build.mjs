// Bundles src/extension.ts (and the `ws` package) into dist/extension.js with esbuild.
//   node scripts/build.mjs [--production] [--watch]
// `vscode` is provided by the extension host. `bufferutil` / `utf-8-validate` are optional native
// speed-ups that `ws` requires inside try/catch: leaving them out keeps the bundle pure JS.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const options = {
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode', 'bufferutil', 'utf-8-validate'],
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'info',
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
