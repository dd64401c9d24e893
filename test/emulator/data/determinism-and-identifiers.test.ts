// Determinism (same seed, same world) and identifier validity: every INN, OGRN and
// correspondent account the data source emits passes the shared check-digit rules.
import { describe, expect, it } from 'vitest';
import {
  completeInn,
  isValidCorrespondentAccount,
  isValidInn,
  isValidOgrn,
} from '../../../src/domain/identifiers.ts';
import { createEmulatorData, isUnknownInn } from '../../../src/emulator/data/index.ts';
import { data, entries, sampleInns } from './helpers.ts';

describe('determinism', () => {
  it('two instances with the same seed give byte-identical answers', () => {
    const a = createEmulatorData();
    const b = createEmulatorData({ seed: 'cpgw' });
    for (const inn of ['7707083893', ...sampleInns().slice(0, 4)]) {
      expect(a.dossierJson(inn)).toBe(b.dossierJson(inn));
      expect(a.requisites(inn)).toEqual(b.requisites(inn));
    }
    expect(a.bank('044525111')).toEqual(b.bank('044525111'));
    expect(a.suggest('Альфа')).toEqual(b.suggest('Альфа'));
    expect(a.search('Смирнов', 'all', 1)).toEqual(b.search('Смирнов', 'all', 1));
    expect(a.person('773412345677')).toEqual(b.person('773412345677'));
  });

  it('a different seed gives a different synthetic world but the same fixtures', () => {
    const other = createEmulatorData({ seed: 'other' });
    const inn = sampleInns()[0]!;
    expect(other.dossierJson(inn)).not.toBe(data().dossierJson(inn));
    expect(other.requisites('7707083893')?.name_short).toBe('ПАО СБЕРБАНК');
  });

  it('any valid INN outside the universe gets a stable company', () => {
    const inn = completeInn('770123456'); // valid, not in the universe
    expect(isValidInn(inn) && !isUnknownInn(inn)).toBe(true);
    const first = data().requisites(inn);
    expect(first).not.toBeNull();
    expect(createEmulatorData().requisites(inn)).toEqual(first);
  });
});

describe('identifiers', () => {
  it('every inn/ogrn in dossiers, requisites and persons passes the check digits', () => {
    const d = data();
    let innCount = 0;
    let ogrnCount = 0;
    for (const inn of ['7707083893', '500100732259', ...sampleInns()]) {
      const trees = [d.dossier(inn), d.requisites(inn), d.person(inn), d.section(inn, 'egrul_rows')];
      for (const tree of trees) {
        for (const [k, v] of entries(tree)) {
          if (k === 'inn' && typeof v === 'string') {
            expect(isValidInn(v), `inn ${v}`).toBe(true);
            innCount++;
          }
          if (k === 'ogrn' && typeof v === 'string') {
            expect(isValidOgrn(v), `ogrn ${v}`).toBe(true);
            ogrnCount++;
          }
        }
      }
    }
    expect(innCount).toBeGreaterThan(500);
    expect(ogrnCount).toBeGreaterThan(100);
  });

  it('every universe company has a valid INN and OGRN of the right kind', () => {
    const u = data().universeInns();
    for (const inn of [...u.legal, ...u.individual]) {
      const r = data().requisites(inn)!;
      expect(isValidInn(inn)).toBe(true);
      expect(isValidOgrn(r.ogrn)).toBe(true);
      expect(r.ogrn).toHaveLength(inn.length === 10 ? 13 : 15);
      expect(isUnknownInn(inn)).toBe(false);
    }
    for (const inn of u.persons) expect(isValidInn(inn)).toBe(true);
  });

  it('every correspondent account passes the key check for its BIC', () => {
    const bics = [
      '044525225',
      '044525187',
      '044525593',
      '044525974',
      '044525823',
      '044525700',
      '044525985',
      '044030653',
    ];
    for (let i = 0; i < 300; i++)
      bics.push(`04${String(10 + (i % 80)).padStart(2, '0')}${String(10000 + i * 37).slice(-5)}`);
    let checked = 0;
    for (const bic of bics) {
      const bank = data().bank(bic);
      if (!bank?.correspondent_account) continue;
      expect(isValidCorrespondentAccount(bank.correspondent_account, bic), bic).toBe(true);
      for (const acc of bank.accounts) expect(isValidCorrespondentAccount(acc.account, bic)).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(150);
  });
});
