import { PlannerClient, PlannerError } from './node_modules/pase-planner/index.js';

const planner = new PlannerClient();
const step = document.getElementById('step');
try {
  const plan = await planner.call('plan', { model: 'alexnet', batch: 128, cluster: { devices: 8 } });
  step.textContent = `${plan.step_time_s.toFixed(4)} s per step`;
  step.dataset.stepTime = String(plan.step_time_s);
  document.getElementById('mode').textContent = (await planner.call('mode')).text;
} catch (e) {
  step.textContent = e instanceof PlannerError ? `error at ${e.where}: ${e.message}` : String(e);
}
