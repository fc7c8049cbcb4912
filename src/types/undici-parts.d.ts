// The two parts of undici the client uses, imported on their own (src/api/client.ts): undici's
// index loads every dispatcher, fetch, WebSocket, the cache and the mocks, some 40 ms at every
// start of plan, apply and watch. Typed as the index types them.
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export = Agent;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export = request;
}
