// The Redis store's bus role: PUBLISH on the shared command connection, and one extra connection
// (opened on the first subscribe) shared by every subscription. A wake-up hint: messages published
// while a subscriber is disconnected are lost.
//
// Must never: run a subscriber's handler inside publish(), or let a throwing handler stop others.
import { Cluster } from 'ioredis';
import type { BusStore } from '../bus-store.ts';
import { quit, type RedisClient, watchClient } from './connection.ts';
import type { RedisLink } from './link.ts';

export class RedisBus implements BusStore {
  private subscriber: RedisClient | null = null;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();

  constructor(private readonly link: RedisLink) {}

  async publish(channel: string, message: string): Promise<void> {
    const { link } = this;
    await link.run(() => link.client.publish(link.k.channel(channel), message));
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const name = this.link.k.channel(channel);
    const listener = (message: string) => {
      try {
        handler(message);
      } catch (error) {
        this.link.onError(error);
      }
    };
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
      this.subscribing.set(name, this.connection().subscribe(name));
    }
    set.add(listener);
    try {
      await this.link.run(() => this.subscribing.get(name) ?? Promise.resolve());
    } catch (error) {
      set.delete(listener);
      if (set.size === 0 && this.handlers.get(name) === set) {
        this.handlers.delete(name);
        this.subscribing.delete(name);
      }
      throw error;
    }
    return async () => {
      if (!set.delete(listener) || set.size > 0 || this.handlers.get(name) !== set) return;
      this.handlers.delete(name);
      this.subscribing.delete(name);
      await this.link.run(() => this.connection().unsubscribe(name));
    };
  }

  async close(): Promise<void> {
    this.handlers.clear();
    this.subscribing.clear();
    if (this.subscriber) await quit(this.subscriber);
  }

  private connection(): RedisClient {
    if (!this.subscriber) {
      // A subscriber queues its SUBSCRIBE until connected and re-subscribes after a reconnect.
      // (Cluster: PUBLISH reaches every node, so one subscriber connection hears every channel.)
      const { client } = this.link;
      const copy =
        client instanceof Cluster
          ? client.duplicate([], { enableOfflineQueue: true })
          : client.duplicate({ enableOfflineQueue: true });
      const sub = watchClient(copy, this.link.onError, true);
      sub.on('message', (channel: string, message: string) => {
        for (const listener of this.handlers.get(channel) ?? []) listener(message);
      });
      this.subscriber = sub;
    }
    return this.subscriber;
  }
}
