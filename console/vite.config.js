// The Console's build: one JS file, one CSS file and index.html, with fixed
// names (no content hashes), into the directory heimdall-api embeds
// (heimdall-api/src/console.rs include_str!s them). `bash scripts/console.sh
// check` rebuilds and diffs against the committed output.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const outDir = fileURLToPath(new URL('../heimdall-api/console/dist', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    // No inline modulepreload polyfill: the CSP allows scripts from 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    sourcemap: false,
    reportCompressedSize: false,
    rollupOptions: {
      output: {
        entryFileNames: 'console.js',
        chunkFileNames: 'console.js',
        assetFileNames: 'console[extname]',
        inlineDynamicImports: true,
      },
    },
  },
});
