// Check-digit rules for Russian identifiers, exactly as the upstream validates them
// (../shared/upstream/reference-data.md). Shared by the emulator and the gateway's local
// validation, so the two can never disagree.

const INN10_WEIGHTS = [2, 4, 10, 3, 5, 9, 4, 6, 8];
const INN12_WEIGHTS_11 = [7, 2, 4, 10, 3, 5, 9, 4, 6, 8];
const INN12_WEIGHTS_12 = [3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8];

function checkDigit(digits: string, weights: number[]): number {
  let sum = 0;
  for (let i = 0; i < weights.length; i++) sum += Number(digits.charCodeAt(i) - 48) * weights[i]!;
  return (sum % 11) % 10;
}

export type InnProblem = 'format' | 'checksum' | 'all_zero';

/** Why an INN is invalid, or null when it is valid (10 digits: legal entity, 12: individual). */
export function innProblem(inn: string): InnProblem | null {
  if (!/^(\d{10}|\d{12})$/.test(inn)) return 'format';
  if (/^0+$/.test(inn)) return 'all_zero';
  if (inn.length === 10) {
    return checkDigit(inn, INN10_WEIGHTS) === Number(inn[9]) ? null : 'checksum';
  }
  const d11 = checkDigit(inn, INN12_WEIGHTS_11);
  const d12 = checkDigit(inn, INN12_WEIGHTS_12);
  return d11 === Number(inn[10]) && d12 === Number(inn[11]) ? null : 'checksum';
}

export function isValidInn(inn: string): boolean {
  return innProblem(inn) === null;
}

/** Completes a 9-digit (or 10/11-digit individual) prefix into a valid INN. */
export function completeInn(prefix: string): string {
  if (prefix.length === 9) return prefix + checkDigit(prefix, INN10_WEIGHTS);
  if (prefix.length === 10) {
    const with11 = prefix + checkDigit(prefix, INN12_WEIGHTS_11);
    return with11 + checkDigit(with11, INN12_WEIGHTS_12);
  }
  throw new Error(`completeInn: prefix must have 9 or 10 digits, got ${prefix.length}`);
}

function modDigit(digits: string, mod: bigint): number {
  return Number((BigInt(digits) % mod) % 10n);
}

/** OGRN: 13 digits, first 1 or 5; OGRNIP: 15 digits, first 3. */
export function isValidOgrn(ogrn: string): boolean {
  if (/^[15]\d{12}$/.test(ogrn)) return modDigit(ogrn.slice(0, 12), 11n) === Number(ogrn[12]);
  if (/^3\d{14}$/.test(ogrn)) return modDigit(ogrn.slice(0, 14), 13n) === Number(ogrn[14]);
  return false;
}

export function completeOgrn(prefix: string): string {
  if (prefix.length === 12) return prefix + modDigit(prefix, 11n);
  if (prefix.length === 14) return prefix + modDigit(prefix, 13n);
  throw new Error(`completeOgrn: prefix must have 12 or 14 digits, got ${prefix.length}`);
}

/** The spec says nine digits; anything else is 422. No further rule (treasury and foreign BICs exist). */
export function isValidBic(bic: string): boolean {
  return /^\d{9}$/.test(bic);
}

const CORR_WEIGHTS = [7, 1, 3];

/** Correspondent account key check: "0" + BIC digits 5-6 + 20-digit account, weights 7,1,3. */
export function isValidCorrespondentAccount(account: string, bic: string): boolean {
  if (!/^\d{20}$/.test(account) || !isValidBic(bic)) return false;
  const s = `0${bic.slice(4, 6)}${account}`;
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += Number(s[i]) * CORR_WEIGHTS[i % 3]!;
  return sum % 10 === 0;
}

/** Sets the control digit (position 9, zero-based 8) of a correspondent account so it passes. */
export function completeCorrespondentAccount(account: string, bic: string): string {
  for (let d = 0; d <= 9; d++) {
    const candidate = `${account.slice(0, 8)}${d}${account.slice(9)}`;
    if (isValidCorrespondentAccount(candidate, bic)) return candidate;
  }
  throw new Error('completeCorrespondentAccount: no control digit fits');
}
