// The little of js-yaml that src/load/fast-path.ts uses (the package ships no types).
declare module 'js-yaml' {
  export const CORE_SCHEMA: unknown;
  export function loadAll(text: string, iterator: null, options: { schema: unknown; json?: boolean }): unknown[];
}
