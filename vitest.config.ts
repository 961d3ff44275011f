import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    disableConsoleIntercept: true,
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // the lab tests share network namespaces and BIRD daemons: one file at a time
    fileParallelism: false,
  },
})
