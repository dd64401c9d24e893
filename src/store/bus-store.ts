// The bus role of the Store: pub/sub between replicas (wake coalesced followers, purge the local
// cache tier of every replica, spread limit changes). A hint, not a queue: a message published
// while a subscriber is disconnected is lost.
//
// Must never: deliver a message synchronously inside publish() (Redis never does).

export interface BusStore {
  publish(channel: string, message: string): Promise<void>;
  /** Returns an unsubscribe function. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
}
