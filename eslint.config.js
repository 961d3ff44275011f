// ESLint (flat config): the recommended rules of ESLint and typescript-eslint, and one stylistic rule: lines of at most
// 120 characters (@stylistic/max-len; a line is exempt only for a URL, a string, a template literal or a regex in it).
// The import direction between src/ folders is checked by dependency-cruiser (.dependency-cruiser.cjs).
import js from '@eslint/js'
import stylistic from '@stylistic/eslint-plugin'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/**', 'node_modules/**', 'test/fixtures/**', 'examples/**', 'bench/out/**']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly',
        clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly',
        queueMicrotask: 'readonly', TextDecoder: 'readonly', TextEncoder: 'readonly', AbortController: 'readonly',
        performance: 'readonly', structuredClone: 'readonly', globalThis: 'readonly', gc: 'readonly'},
    },
    rules: {
      // style, not correctness: left to review
      'prefer-const': 'off',
      'no-useless-assignment': 'off',
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none'}],
    },
  },
  {
    plugins: {'@stylistic': stylistic},
    rules: {
      '@stylistic/max-len': ['error', {code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true,
        ignoreRegExpLiterals: true}],
    },
  },
  {files: ['**/*.cjs'], languageOptions: {sourceType: 'commonjs', globals: {module: 'writable', require: 'readonly'}}},
  // tests poke at untyped objects (netlink replies, oclif internals)
  {files: ['test/**'], rules: {'@typescript-eslint/no-explicit-any': 'off'}},
)
