"""deploy/worker-service.yaml, created as a stack on moto's CloudFormation over HTTP.

moto creates the log group, the IAM roles, the task definition and the service; those are
read back from moto's ECS, IAM and Logs APIs. It skips the scalable target, the scaling
policies, the alarms and the schedules, and of the task definition and the service it
keeps only the family, container definitions and memory, and the name, cluster and task
definition. ``tests/deploy/cloudformation.py`` creates the skipped types through their own
APIs on the same server; the properties moto ignores are checked in the resolved template.
"""

from __future__ import annotations

import ast
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from django.core.management import get_commands

from jobs import metrics
from jobs.timetable import health
from tests.deploy.cloudformation import SKIPPED_BY_MOTO, Template, container_overrides, create_skipped
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "worker-service.yaml"
REGION = "eu-central-1"
ACCOUNT = "123456789012"  # moto's default account
STACK = "platform"
CLUSTER = "platform"
NAMESPACE = "JobPlatform/Prod"


@dataclass
class Stack:
    template: Template
    physical_ids: dict[str, str]  # logical id → physical id, as moto's CloudFormation lists them
    skipped: set[str]  # resource types moto's CloudFormation listed no resource for
    secret_arn: str
    key_arn: str
    subnets: list[str]
    security_group: str
    aws: Callable[[str], Any]


@pytest.fixture(scope="module")
def stack(moto_server: str) -> Iterator[Stack]:
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=5)

    def aws(service: str) -> Any:
        return boto3.client(service, endpoint_url=moto_server, region_name=REGION)

    # What the stack expects to exist: a cluster, a VPC's subnets and a security group, and
    # the database URL in Secrets Manager.
    aws("ecs").create_cluster(clusterName=CLUSTER)
    ec2 = aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.40.{n}.0/24")["Subnet"]["SubnetId"] for n in (1, 2)
    ]
    security_group = ec2.create_security_group(GroupName="workers", Description="workers", VpcId=vpc)[
        "GroupId"
    ]
    secret_arn = aws("secretsmanager").create_secret(
        Name="platform/database-url", SecretString="postgres://platform:pw@db.internal:5432/platform"
    )["ARN"]
    key_arn = aws("secretsmanager").create_secret(Name="platform/secret-key", SecretString="k" * 50)["ARN"]
    parameters = {
        "Image": "123456789012.dkr.ecr.eu-central-1.amazonaws.com/platform:1.4.0",
        "Cluster": CLUSTER,
        "Subnets": ",".join(subnets),
        "SecurityGroups": security_group,
        "DatabaseUrlSecretArn": secret_arn,
        "SecretKeySecretArn": key_arn,
        "MetricsNamespace": NAMESPACE,
        "AlarmTopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:platform-alarms",
        # The option with every resource: EventBridge Scheduler runs the timers. The default
        # (the workers book them) is checked in the resolved template below.
        "TimerScheduler": "eventbridge",
    }

    cloudformation = aws("cloudformation")
    cloudformation.create_stack(
        StackName=STACK,
        TemplateBody=TEMPLATE.read_text(),
        Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in parameters.items()],
        Capabilities=["CAPABILITY_IAM"],
    )
    wait_for(
        lambda: (
            cloudformation.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
        ),
        timeout=30,
        message="the stack to be created",
    )
    listed = cloudformation.list_stack_resources(StackName=STACK)["StackResourceSummaries"]
    physical_ids = {
        row["LogicalResourceId"]: row["PhysicalResourceId"] for row in listed if row["LogicalResourceId"]
    }

    template = Template(
        TEMPLATE,
        parameters=parameters,
        pseudo={
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": STACK,
            "AWS::Partition": "aws",
        },
    )
    skipped = {
        resource["Type"]
        for logical_id, resource in template.resources().items()
        if logical_id not in physical_ids
    }
    # What the created resources answer to Ref and Fn::GetAtt, read from moto's own APIs.
    iam = aws("iam")
    for logical_id in template.resources("AWS::IAM::Role"):
        role = iam.get_role(RoleName=physical_ids[logical_id])["Role"]
        template.refs[logical_id] = role["RoleName"]
        template.attributes[(logical_id, "Arn")] = role["Arn"]
    template.refs["TaskDefinition"] = physical_ids["TaskDefinition"]
    template.refs["LogGroup"] = physical_ids["LogGroup"]
    (service,) = aws("ecs").describe_services(cluster=CLUSTER, services=[physical_ids["Service"]])["services"]
    template.refs["Service"] = service["serviceArn"]
    template.attributes[("Service", "Name")] = service["serviceName"]

    create_skipped(template, aws)
    yield Stack(template, physical_ids, skipped, secret_arn, key_arn, subnets, security_group, aws)


def _role_policy(stack: Stack, role: str, name: str) -> dict[str, Any]:
    document = stack.aws("iam").get_role_policy(RoleName=stack.physical_ids[role], PolicyName=name)[
        "PolicyDocument"
    ]
    if isinstance(document, dict):  # botocore decodes the URL-encoded JSON that AWS sends
        return document
    # moto's CloudFormation stores a role's inline policy as the Python text of the dict.
    return ast.literal_eval(document)


def _container(stack: Stack) -> dict[str, Any]:
    definition = stack.aws("ecs").describe_task_definition(
        taskDefinition=stack.physical_ids["TaskDefinition"]
    )
    (container,) = definition["taskDefinition"]["containerDefinitions"]
    return container


def test_stack__moto_creates_the_roles_logs_task_definition_and_service_and_skips_the_rest(stack):
    assert stack.skipped == SKIPPED_BY_MOTO
    assert {"LogGroup", "ExecutionRole", "TaskRole", "SchedulerRole", "TaskDefinition", "Service"} <= set(
        stack.physical_ids
    )


def test_task_definition__runs_runworker_and_gives_it_120_seconds_to_stop(stack):
    container = _container(stack)

    assert container["command"] == ["python", "manage.py", "runworker", "--concurrency", "2"]
    assert container["stopTimeout"] == 120
    assert container["image"].endswith("/platform:1.4.0")
    assert container["linuxParameters"]["initProcessEnabled"] is True
    environment = {item["name"]: item["value"] for item in container["environment"]}
    assert environment["JOBS_CLOUDWATCH_NAMESPACE"] == NAMESPACE
    # The worker's own grace ends before ECS's SIGKILL, so it can still put jobs back.
    assert float(environment["JOBS_SHUTDOWN_TIMEOUT"]) < container["stopTimeout"]
    assert container["logConfiguration"]["options"]["awslogs-group"] == stack.physical_ids["LogGroup"]
    assert "runworker" in get_commands()
    assert environment["JOBS_SCHEDULER"] == "false"  # EventBridge runs the timers here


def test_timers__by_default_the_workers_book_them_and_no_schedule_is_made():
    template = Template(
        TEMPLATE,
        parameters={"Image": "platform:1", "Cluster": CLUSTER, "Subnets": "subnet-a", "SecurityGroups": "sg-a",
                    "DatabaseUrlSecretArn": "arn", "SecretKeySecretArn": "arn"},
        pseudo={"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::StackName": STACK, "AWS::Partition": "aws"},
    )  # fmt: skip
    template.attributes.update({(role, "Arn"): f"arn:{role}" for role in ("ExecutionRole", "TaskRole")})
    template.refs["LogGroup"] = "/ecs/platform/worker"

    assert template.resources("AWS::Scheduler::Schedule") == {}
    assert "SchedulerRole" not in template.resources()
    (container,) = template.properties("TaskDefinition")["ContainerDefinitions"]
    assert {"Name": "JOBS_SCHEDULER", "Value": "true"} in container["Environment"]
    assert "OverdueTimersAlarm" in template.resources()


def test_task_definition__takes_the_database_url_and_secret_key_from_secrets_manager_only(stack):
    container = _container(stack)

    assert container["secrets"] == [
        {"name": "DATABASE_URL", "valueFrom": stack.secret_arn},
        {"name": "SECRET_KEY", "valueFrom": stack.key_arn},
    ]
    assert all("postgres://" not in item["value"] for item in container["environment"])
    assert "SECRET_KEY" not in {item["name"] for item in container["environment"]}
    for name in ("DatabaseUrlSecretArn", "SecretKeySecretArn"):
        assert stack.template.body["Parameters"][name]["AllowedPattern"].startswith("^arn:aws")
    # Only the execution role reads them, and only those two secrets.
    policy = _role_policy(stack, "ExecutionRole", "read-secrets")
    assert policy["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": [stack.secret_arn, stack.key_arn],
        }
    ]


def test_task_definition__indexes_full_text_only_until_a_qdrant_server_is_given(stack):
    environment = {item["name"]: item["value"] for item in _container(stack)["environment"]}
    assert (environment["VECTOR_INDEX"], environment["QDRANT_URL"]) == ("false", "")

    # With a server (and its key's secret): the vector index, the key from Secrets Manager.
    key_arn = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:platform/qdrant-key"
    given = Template(
        TEMPLATE,
        parameters={
            **{name: "x" for name in ("Image", "Cluster", "Subnets", "SecurityGroups")},
            "DatabaseUrlSecretArn": stack.secret_arn,
            "SecretKeySecretArn": stack.key_arn,
            "QdrantUrl": "https://qdrant.internal:6333",
            "QdrantApiKeySecretArn": key_arn,
        },
        pseudo={
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": STACK,
            "AWS::Partition": "aws",
        },
    )
    given.refs["LogGroup"] = stack.physical_ids["LogGroup"]
    (container,) = given.resolve(given.resources()["TaskDefinition"]["Properties"]["ContainerDefinitions"])
    environment = {item["Name"]: item["Value"] for item in container["Environment"]}
    assert (environment["VECTOR_INDEX"], environment["QDRANT_URL"]) == (
        "true",
        "https://qdrant.internal:6333",
    )
    assert {"Name": "QDRANT_API_KEY", "ValueFrom": key_arn} in container["Secrets"]
    policy = given.resolve(given.resources()["ExecutionRole"]["Properties"]["Policies"])
    assert key_arn in policy[0]["PolicyDocument"]["Statement"][0]["Resource"]


def test_task_definition__declares_fargate_and_its_roles(stack):
    # Properties moto's CloudFormation does not keep on the task definition.
    properties = stack.template.properties("TaskDefinition")
    assert (properties["RequiresCompatibilities"], properties["NetworkMode"]) == (["FARGATE"], "awsvpc")
    iam = stack.aws("iam")
    assert (
        properties["ExecutionRoleArn"]
        == iam.get_role(RoleName=stack.physical_ids["ExecutionRole"])["Role"]["Arn"]
    )
    assert properties["TaskRoleArn"] == iam.get_role(RoleName=stack.physical_ids["TaskRole"])["Role"]["Arn"]
    (statement,) = _role_policy(stack, "TaskRole", "publish-scaling-metrics")["Statement"]
    assert statement["Action"] == "cloudwatch:PutMetricData"
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": NAMESPACE}}


def test_service__runs_the_task_definition_on_the_cluster_in_the_given_subnets(stack):
    (service,) = stack.aws("ecs").describe_services(
        cluster=CLUSTER, services=[stack.physical_ids["Service"]]
    )["services"]
    assert service["serviceName"] == f"{STACK}-workers"
    assert service["clusterArn"].endswith(f":cluster/{CLUSTER}")
    assert service["taskDefinition"] == stack.physical_ids["TaskDefinition"]
    # Properties moto's CloudFormation does not keep on the service.
    properties = stack.template.properties("Service")
    assert properties["LaunchType"] == "FARGATE"
    assert "DesiredCount" not in properties  # auto scaling owns it
    network = properties["NetworkConfiguration"]["AwsvpcConfiguration"]
    assert (network["Subnets"], network["SecurityGroups"]) == (stack.subnets, [stack.security_group])


def test_scaling__tracks_backlog_per_task_and_steps_out_on_the_oldest_jobs_age(stack):
    autoscaling = stack.aws("application-autoscaling")
    resource_id = f"service/{CLUSTER}/{STACK}-workers"
    (target,) = autoscaling.describe_scalable_targets(ServiceNamespace="ecs")["ScalableTargets"]
    assert (target["ResourceId"], target["ScalableDimension"]) == (resource_id, "ecs:service:DesiredCount")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 20)

    policies = {
        policy["PolicyType"]: policy
        for policy in autoscaling.describe_scaling_policies(ServiceNamespace="ecs", ResourceId=resource_id)[
            "ScalingPolicies"
        ]
    }
    tracking = policies["TargetTrackingScaling"]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["TargetValue"] == 40
    assert tracking["CustomizedMetricSpecification"] == {
        "MetricName": metrics.BACKLOG_PER_TASK,
        "Namespace": NAMESPACE,
        "Statistic": "Maximum",
        "Unit": "Count",
    }
    assert tracking["ScaleOutCooldown"] < tracking["ScaleInCooldown"]
    steps = policies["StepScaling"]["StepScalingPolicyConfiguration"]
    assert steps["AdjustmentType"] == "PercentChangeInCapacity"
    assert [step["ScalingAdjustment"] for step in steps["StepAdjustments"]] == [50, 100]

    alarms = stack.aws("cloudwatch").describe_alarms(AlarmNames=[f"{STACK}-oldest-job-age-scale-out"])
    (scale_out,) = alarms["MetricAlarms"]
    assert scale_out["MetricName"] == metrics.OLDEST_DUE_JOB_AGE
    assert scale_out["AlarmActions"] == [policies["StepScaling"]["PolicyARN"]]


def test_alarms__watch_failed_jobs_the_oldest_jobs_age_unserved_jobs_a_silent_sweep_and_overdue_timers(stack):
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:platform-alarms"
    alarms = {
        alarm["AlarmName"].removeprefix(f"{STACK}-"): alarm
        for alarm in stack.aws("cloudwatch").describe_alarms()["MetricAlarms"]
    }

    failed = alarms["failed-jobs"]
    assert (failed["Namespace"], failed["MetricName"], failed["Statistic"]) == (
        NAMESPACE,
        metrics.FAILED_JOBS,
        "Sum",
    )
    assert (failed["Threshold"], failed["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    assert failed["AlarmActions"] == [topic]
    age = alarms["oldest-job-age"]
    assert (age["MetricName"], age["Threshold"], age["EvaluationPeriods"]) == (
        metrics.OLDEST_DUE_JOB_AGE,
        1800,
        2,
    )
    assert age["AlarmActions"] == [topic]
    unserved = alarms["unserved-jobs"]
    assert (unserved["MetricName"], unserved["Statistic"], unserved["Threshold"]) == (
        metrics.UNSERVED_JOBS,
        "Maximum",
        1,
    )
    assert (unserved["ComparisonOperator"], unserved["EvaluationPeriods"]) == (
        "GreaterThanOrEqualToThreshold",
        2,
    )
    assert unserved["AlarmActions"] == [topic]
    silent = alarms["sweep-silent"]
    assert (silent["MetricName"], silent["TreatMissingData"]) == (metrics.QUEUED_JOBS, "breaching")
    overdue = alarms["overdue-timers"]
    assert (overdue["MetricName"], overdue["Statistic"], overdue["Threshold"]) == (
        health.OVERDUE_TIMERS,
        "Maximum",
        1,
    )
    assert overdue["AlarmActions"] == [topic]


@pytest.mark.parametrize(
    "name, rate, command",
    [
        ("sweep", "rate(5 minutes)", "sweep"),
        ("reconcile", "rate(15 minutes)", "reconcile"),
        ("trial-sweep", "rate(1 hour)", "trial_sweep"),
    ],
)
def test_schedules__run_each_timer_as_a_one_off_task(stack, name, rate, command):
    schedule = stack.aws("scheduler").get_schedule(Name=f"{STACK}-{name}")

    assert schedule["ScheduleExpression"] == rate
    target = schedule["Target"]
    assert target["Arn"] == f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"
    assert target["EcsParameters"]["TaskDefinitionArn"] == stack.physical_ids["TaskDefinition"]
    assert target["EcsParameters"]["LaunchType"] == "FARGATE"
    assert target["RoleArn"].endswith(stack.physical_ids["SchedulerRole"])
    # The override names the task definition's container and a command this project has.
    assert container_overrides(target["Input"]) == {
        _container(stack)["name"]: ["python", "manage.py", command]
    }
    assert command in get_commands()
