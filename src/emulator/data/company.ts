// The `company` object (dossier member and section) and the light requisites record, both
// built from a company's identity. For a sole proprietor the address and its municipal
// codes (okato, oktmo) are hidden: null.
import type { CompanyCore } from './core.ts';
import { rublesFromKopecks } from './money.ts';
import { companyFixture } from './names.ts';
import { REFERENCE_DATE, Rng } from './prng.ts';
import type { CodeName, CompanyObject, Requisites, StatisticsCodes } from './types.ts';

export function taxAuthorityOf(core: CompanyCore): { code: string; name: string } {
  const code = core.inn.slice(0, 4);
  return { code, name: `ИФНС России № ${Number(code.slice(2))} по ${core.region.name}` };
}

export function statisticsCodes(seed: string, core: CompanyCore): StatisticsCodes {
  const rng = new Rng(`${seed}|${core.inn}|codes`);
  const hidden = core.type === 'individual';
  const fixture = companyFixture(core.inn);
  const state = fixture?.okopf === '75101';
  const okato: CodeName = { code: `${core.region.okato}${rng.digits(9)}`, name: core.region.name };
  const oktmo: CodeName = { code: `${core.region.oktmo}${rng.digits(9)}`, name: core.region.city };
  return {
    okpo: core.okpo,
    okato: hidden ? null : okato,
    oktmo: hidden ? null : oktmo,
    okfs: state
      ? { code: '12', name: 'Федеральная собственность' }
      : { code: '16', name: 'Частная собственность' },
    okogu: hidden
      ? { code: '4210015', name: 'Индивидуальные предприниматели' }
      : state
        ? { code: '1500010', name: 'Центральный банк Российской Федерации' }
        : {
            code: '4210014',
            name: 'Организации, учрежденные юридическими лицами или гражданами, или юридическими лицами и гражданами совместно',
          },
    okopf: {
      code: fixture?.okopf ?? core.form.okopf,
      name: fixture?.okopfName ?? core.form.okopfName,
    },
  };
}

export function companyObject(seed: string, core: CompanyCore): CompanyObject {
  const codes = statisticsCodes(seed, core);
  return {
    inn: core.inn,
    type: core.type,
    ogrn: core.ogrn,
    ogrn_date: core.ogrnDate,
    kpp: core.kpp,
    okpo: core.okpo,
    okato: codes.okato,
    name_full: core.nameFull,
    name_short: core.nameShort,
    status: core.status,
    registered_on: core.registeredOn,
    liquidated_on: core.liquidatedOn,
    address: core.address,
    heads: core.heads,
    main_activity: { code: core.okved.code, name: core.okved.name },
    charter_capital: core.capitalKopecks === null ? null : rublesFromKopecks(core.capitalKopecks),
    employees: core.employees,
    statistics_codes: codes,
    tax_authority: taxAuthorityOf(core),
  };
}

export function requisitesOf(seed: string, core: CompanyCore): Requisites {
  return {
    inn: core.inn,
    type: core.type,
    ogrn: core.ogrn,
    ogrn_date: core.ogrnDate,
    kpp: core.kpp,
    okpo: core.okpo,
    name_full: core.nameFull,
    name_short: core.nameShort,
    status: core.status,
    registered_on: core.registeredOn,
    liquidated_on: core.liquidatedOn,
    updated_on: REFERENCE_DATE,
    address: core.address,
    heads: core.heads,
    statistics_codes: statisticsCodes(seed, core),
  };
}
