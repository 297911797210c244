import { defineConfig } from 'vitest/config';
import preact from '@preact/preset-vite';

// Deterministic output: content-hashed names, no timestamps, no source
// maps (the Go side embeds dist and checks it against the sources).
// DROVER_WEB_OUT builds elsewhere (make web-check compares that build
// with the committed dist).
export default defineConfig({
  plugins: [preact({ devtoolsInProd: false, prefreshEnabled: false })],
  build: {
    outDir: process.env.DROVER_WEB_OUT ?? 'dist',
    emptyOutDir: false,
    sourcemap: false,
    target: 'es2022',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: {
      output: {
        entryFileNames: 'assets/[name]-[hash].js',
        chunkFileNames: 'assets/[name]-[hash].js',
        assetFileNames: 'assets/[name]-[hash][extname]',
      },
    },
  },
  server: {
    proxy: {
      '/v1': { target: process.env.DROVER_HUB ?? 'https://127.0.0.1:17070', secure: false, ws: true },
      '/auth': { target: process.env.DROVER_HUB ?? 'https://127.0.0.1:17070', secure: false },
      '/config.json': { target: process.env.DROVER_HUB ?? 'https://127.0.0.1:17070', secure: false },
    },
  },
  test: {
    environment: 'happy-dom',
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});
