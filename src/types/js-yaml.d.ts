// The little of js-yaml that src/load/fast-path.ts uses (the package ships no types).
declare module 'js-yaml' {
  export const CORE_SCHEMA: unknown;
  export const FAILSAFE_SCHEMA: { extend(types: { implicit: unknown[] }): unknown };
  export const types: { readonly null: unknown; readonly bool: unknown };
  export class Type {
    constructor(tag: string, options: { kind: 'scalar'; resolve(data: string | null): boolean; construct(data: string): unknown });
  }
  export function loadAll(text: string, iterator: null, options: { schema: unknown; json?: boolean }): unknown[];
}
