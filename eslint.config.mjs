// The rules of the Effect repositories: eslint and typescript-eslint recommended, formatting by
// dprint through @effect/eslint-plugin, with the same dprint settings
import effect from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["dist/**", ".bench-out/**", ".docgen/**", "node_modules/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mjs"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      // the command line strips and tests ANSI escapes on purpose
      "no-control-regex": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      // dprint sorts the names inside an import
      "sort-imports": "off",
      "no-unused-vars": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  }
)
