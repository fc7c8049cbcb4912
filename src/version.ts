// Replaced at build time by esbuild's define; read from package.json when run from source (tests).
declare const __DUS_SYNC_VERSION__: string | undefined;
export const VERSION: string = typeof __DUS_SYNC_VERSION__ === 'string' ? __DUS_SYNC_VERSION__ : '0.0.0-dev';
