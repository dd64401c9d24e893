// The limits package's public surface: what the request pipeline and the admin API use.
export {
  DEFAULT_LIMIT_CLASSES,
  LIMIT_CLASS_NAMES,
  type LimitClassConfig,
  type LimitClassName,
  routeClasses,
} from './limit-classes.ts';
export {
  type AcquireRequest,
  type AppLimits,
  type Denial,
  type DenialReason,
  type GovernorState,
  type Headroom,
  type Permit,
  RateGovernor,
  type RateGovernorOptions,
} from './rate-governor.ts';
