"""What moto's CloudFormation leaves out, done by the test itself against the same server.

moto 5.2 creates the stack's log group, IAM roles, ECS task definition and ECS service, but
has no CloudFormation model for ``AWS::ApplicationAutoScaling::ScalableTarget``,
``AWS::ApplicationAutoScaling::ScalingPolicy``, ``AWS::CloudWatch::Alarm`` or
``AWS::Scheduler::Schedule``: it skips them (logging "No Moto CloudFormation support") and
still reports CREATE_COMPLETE. ``Template`` resolves the template's intrinsic functions
(Ref, Fn::GetAtt, Fn::Sub, Fn::If, Fn::Join) against the stack moto made, and
``create_skipped`` creates those four types through each service's own API (botocore
checks every request against the service's model), so the test can read them back as it
reads the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cfnlint.decode import cfn_yaml

SKIPPED_BY_MOTO = {
    "AWS::ApplicationAutoScaling::ScalableTarget",
    "AWS::ApplicationAutoScaling::ScalingPolicy",
    "AWS::CloudWatch::Alarm",
    "AWS::Scheduler::Schedule",
}

_NO_VALUE = object()


class Template:
    """A parsed template plus what is known of the stack made from it."""

    def __init__(self, path: Path, *, parameters: dict[str, str], pseudo: dict[str, str]) -> None:
        self.body = cfn_yaml.load(str(path))
        self.parameters = {
            name: self._parameter(name, spec, parameters.get(name, spec.get("Default")))
            for name, spec in self.body["Parameters"].items()
        }
        self.pseudo = pseudo
        self.refs: dict[str, Any] = {}  # logical id → what Ref returns
        self.attributes: dict[tuple[str, str], Any] = {}  # (logical id, attribute) → value

    @staticmethod
    def _parameter(name: str, spec: dict[str, Any], value: Any) -> Any:
        if value is None:
            raise KeyError(f"parameter {name} has no value and no default")
        kind = spec["Type"]
        if kind.startswith("List<") or kind == "CommaDelimitedList":
            return [part for part in str(value).split(",") if part]
        if kind == "Number":
            number = float(value)
            return int(number) if number.is_integer() else number
        return str(value)

    def resources(self, resource_type: str | None = None) -> dict[str, dict[str, Any]]:
        """The resources the stack has (of ``resource_type``): those whose condition holds."""
        return {
            logical_id: resource
            for logical_id, resource in self.body["Resources"].items()
            if (resource_type is None or resource["Type"] == resource_type)
            and ("Condition" not in resource or self.condition(resource["Condition"]))
        }

    def properties(self, logical_id: str) -> dict[str, Any]:
        return self.resolve(self.body["Resources"][logical_id].get("Properties", {}))

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.body["Conditions"][name]))

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            handler = self._functions().get(key)
            if handler:
                return handler(argument)
        resolved = {key: self.resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not _NO_VALUE}

    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self._ref,
            "Fn::GetAtt": lambda arg: self.attributes[(arg[0], arg[1])],
            "Fn::Sub": self._sub,
            "Fn::Join": lambda arg: str(arg[0]).join(
                str(self.resolve(part)) for part in self.resolve(arg[1])
            ),
            "Fn::If": lambda arg: self.resolve(arg[1] if self.condition(arg[0]) else arg[2]),
            "Fn::Equals": lambda arg: self.resolve(arg[0]) == self.resolve(arg[1]),
            "Fn::Not": lambda arg: not self.resolve(arg[0]),
            "Condition": self.condition,
        }

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        return self.refs[name]

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.resolve(variables[name]))
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return str(self.attributes[(logical_id, attribute)])
            return str(self._ref(name))

        return re.sub(r"\$\{([^}!]+)\}", replace, text)


def create_skipped(template: Template, clients: Callable[[str], Any]) -> None:
    """Create the resource types moto's CloudFormation skips, in dependency order."""
    autoscaling = clients("application-autoscaling")
    targets: dict[str, dict[str, str]] = {}  # scalable target id → its key fields
    for logical_id in template.resources("AWS::ApplicationAutoScaling::ScalableTarget"):
        props = template.properties(logical_id)
        autoscaling.register_scalable_target(**props)
        target = {key: props[key] for key in ("ServiceNamespace", "ResourceId", "ScalableDimension")}
        # Ref of a scalable target is its id; the policies name it as ScalingTargetId.
        template.refs[logical_id] = "|".join(target.values())
        targets[template.refs[logical_id]] = target

    for logical_id in template.resources("AWS::ApplicationAutoScaling::ScalingPolicy"):
        props = template.properties(logical_id)
        props.update(targets[props.pop("ScalingTargetId")])
        arn = autoscaling.put_scaling_policy(**props)["PolicyARN"]
        template.refs[logical_id] = arn  # Ref of a scaling policy is its ARN

    cloudwatch = clients("cloudwatch")
    for logical_id in template.resources("AWS::CloudWatch::Alarm"):
        props = template.properties(logical_id)
        cloudwatch.put_metric_alarm(**props)
        template.refs[logical_id] = props["AlarmName"]

    scheduler = clients("scheduler")
    for logical_id in template.resources("AWS::Scheduler::Schedule"):
        props = template.properties(logical_id)
        network = props["Target"]["EcsParameters"]["NetworkConfiguration"]
        # The one key whose spelling differs between the resource and the API.
        network["awsvpcConfiguration"] = network.pop("AwsvpcConfiguration")
        scheduler.create_schedule(**props)
        template.refs[logical_id] = props["Name"]


def container_overrides(schedule_input: str) -> dict[str, list[str]]:
    """{container name: command} from a schedule's ECS input."""
    return {
        override["name"]: override["command"] for override in json.loads(schedule_input)["containerOverrides"]
    }
