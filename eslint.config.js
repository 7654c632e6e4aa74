import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      '.data/',
      '.cache/',
      'circuits/build/',
      'coverage/',
      'native-prover/build/',
      'dist/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Read configuration through shared/platform/env.ts.',
        },
      ],
    },
  },
  {
    files: ['shared/platform/env.ts', 'test/**', 'bench/**', 'scripts/**', 'vitest.config.ts', 'circuits/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
