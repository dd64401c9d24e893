// The memory store's bus role: an EventEmitter with asynchronous delivery, like Redis pub/sub.
//
// Must never: deliver a published message synchronously, or let one throwing subscriber stop the
// others.
import { EventEmitter } from 'node:events';
import type { BusStore } from '../bus-store.ts';

export class MemoryBus implements BusStore {
  private readonly events = new EventEmitter();

  constructor(private readonly onError: (error: unknown) => void) {
    this.events.setMaxListeners(0);
  }

  async publish(channel: string, message: string): Promise<void> {
    setImmediate(() => this.events.emit(channel, message));
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const listener = (message: string) => {
      try {
        handler(message);
      } catch (error) {
        this.onError(error);
      }
    };
    this.events.on(channel, listener);
    return async () => {
      this.events.off(channel, listener);
    };
  }

  close(): void {
    this.events.removeAllListeners();
  }
}
