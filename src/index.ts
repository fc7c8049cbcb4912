// The programmatic API, for tests and for tools that embed dus-sync.
export * from './model/index.js';
export * from './errors.js';
export { startEmulator } from './emulator/index.js';
export type { EmulatorOptions, RunningEmulator, FaultSettings, Seed } from './emulator/index.js';
