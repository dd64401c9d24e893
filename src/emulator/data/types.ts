// Public shapes of the emulator's synthetic data, as served by the emulator server. Fields the
// upstream spec names are typed exactly; "not shown" shapes are our choices, recorded in
// docs/upstream-gaps-data.md.

export type CompanyType = 'legal' | 'individual';
export type StatusCode = 'ACTIVE' | 'LIQUIDATING' | 'LIQUIDATED' | 'BANKRUPT' | 'REORGANIZING';

export interface CodeName {
  code: string;
  name: string;
}

export interface CompanyStatus {
  code: StatusCode;
  title: string;
}

export interface Address {
  postal_code: string;
  region: string;
  locality: string;
  street: string;
  house: string;
  office: string | null;
  full: string;
}

export interface Head {
  inn: string;
  full_name: string;
  post: string;
  since: string;
  disqualified: boolean;
}

export interface Founder {
  kind: 'person' | 'legal';
  inn: string;
  ogrn: string | null;
  name: string;
  share: { nominal: string; percent: number };
  since: string;
}

/** okato/oktmo are null for a sole proprietor (home address municipal codes are hidden). */
export interface StatisticsCodes {
  okpo: string;
  okato: CodeName | null;
  oktmo: CodeName | null;
  okfs: CodeName;
  okogu: CodeName;
  okopf: CodeName;
}

export interface CompanyObject {
  inn: string;
  type: CompanyType;
  ogrn: string;
  ogrn_date: string;
  kpp: string | null;
  okpo: string;
  okato: CodeName | null;
  name_full: string;
  name_short: string;
  status: CompanyStatus;
  registered_on: string;
  liquidated_on: string | null;
  address: Address | null;
  heads: Head[];
  main_activity: { code: string; name: string };
  charter_capital: string | null;
  employees: number | null;
  statistics_codes: StatisticsCodes;
  tax_authority: { code: string; name: string };
}

export interface Score {
  score: number;
  risk_level: 'low' | 'medium' | 'high';
}

/** A page of a long section; `cursor` is '' on the last page. */
export interface SectionPage<T = unknown> {
  items: T[];
  cursor: string;
}

export interface CourtCase {
  case_number: string;
  court: string;
  role: 'plaintiff' | 'defendant' | 'third_party';
  role_title: string;
  amount: string;
  filed_on: string;
  status: string;
  category: string;
  counterparty: { inn: string; name: string };
}

/** The full dossier: `found`, then 25 section members (procurement_contacts, egrul_rows and publication_dates are absent). */
export interface Dossier {
  found: true;
  company: CompanyObject;
  score: Score;
  [section: string]: unknown;
}

export interface Requisites {
  inn: string;
  type: CompanyType;
  ogrn: string;
  ogrn_date: string;
  kpp: string | null;
  okpo: string;
  name_full: string;
  name_short: string;
  status: CompanyStatus;
  registered_on: string;
  liquidated_on: string | null;
  updated_on: string;
  address: Address | null;
  heads: Head[];
  statistics_codes: StatisticsCodes;
}

export interface CodeTitle {
  code: string;
  title: string;
}

export interface BankRestriction extends CodeTitle {
  date: string;
}

export interface BankAccount {
  account: string;
  type: CodeTitle;
  status: CodeTitle;
  opened_on: string;
  restrictions: BankRestriction[];
}

export interface Bank {
  bic: string;
  name: string;
  english_name: string;
  correspondent_account: string | null;
  swift: string[];
  address: {
    postal_code: string;
    region: string;
    locality_type: string;
    locality: string;
    street: string;
    house: string;
    full: string;
  };
  /** 'closed' comes with closed_on (the spec's "status closed and a date"). */
  status: 'active' | 'closed';
  closed_on: string | null;
  participant_status: CodeTitle;
  participant_type: CodeTitle;
  registration_number: string | null;
  inn: string | null;
  restrictions: BankRestriction[];
  accounts: BankAccount[];
  included_on: string;
  directory_date: string;
}

export interface PersonCompany {
  inn: string;
  ogrn: string;
  role: 'head' | 'founder' | 'entrepreneur';
  role_title: string;
  name_short: string;
  name_full: string;
  type: CompanyType;
  status: CompanyStatus;
  post: string | null;
  share_percent: number | null;
  since: string;
}

export interface Person {
  inn: string;
  /** 'individual' for a natural person; 'legal' for an organization that is a founder. */
  kind: 'individual' | 'legal';
  full_name: string;
  ogrn: string | null;
  head_count: number;
  founder_count: number;
  companies: PersonCompany[];
}

export interface SuggestionHead {
  inn: string;
  full_name: string;
  post: string;
}

export interface Suggestion {
  inn: string;
  type: CompanyType;
  kpp?: string;
  ogrn: string;
  name: string;
  name_full: string;
  address?: string;
  status?: CompanyStatus;
  heads: SuggestionHead[] | null;
}

export interface SearchItem {
  kind: 'company' | 'entrepreneur' | 'person';
  inn: string;
  [field: string]: unknown;
}

export interface SearchGroup {
  total: number;
  has_more: boolean;
  items: SearchItem[];
}

export interface SearchData {
  query: string;
  kind: string;
  groups: Partial<Record<'companies' | 'entrepreneurs' | 'persons', SearchGroup>>;
}
