// ZeroC Ice 3.7 C++11 client of floe-bench's `router` test: the same calls to an
// Interop::Tester server (tests/interop/Test.ice), directly or through a Glacier2 router.
// Usage: ice-router-client <proxy-string> <milliseconds> [--only=<test>] [--Ice.Default.Router=...] [--Ice.Prop=value ...]
// With Ice.Default.Router set it creates a session (any user id and password: the router is
// expected to let everyone in) and routes its callback adapter through the router; without, it
// calls the server directly and its callback adapter listens on 127.0.0.1.
// Each test runs for <milliseconds> after a short warm-up and prints
// "RESULT <name> <value> <unit>" lines, or "RESULT <name> error <what>". Exits 0 when every
// test produced its values, 1 otherwise, 2 on a usage error. --only=<test> runs that test alone
// (twoway, ami, oneway, bytes or callback).
#include <Glacier2/Glacier2.h>
#include <Ice/Ice.h>
#include <Test.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std;
using namespace Interop;

namespace
{

using Clock = chrono::steady_clock;

bool allProduced = true;

string oneLine(string s)
{
    for(auto& c : s)
    {
        if(c == '\n' || c == '\r')
        {
            c = ' ';
        }
    }
    return s;
}

void result(const string& name, double value, const string& unit)
{
    char text[64];
    snprintf(text, sizeof(text), "%.2f", value);
    cout << "RESULT " << name << " " << text << " " << unit << endl;
}

string only;

// Runs one test; f prints its RESULT lines. An exception prints an error line instead.
void runTest(const string& name, const function<void()>& f)
{
    if(!only.empty() && only != name)
    {
        return;
    }
    try
    {
        f();
    }
    catch(const exception& e)
    {
        allProduced = false;
        cout << "RESULT " << name << " error " << oneLine(e.what()) << endl;
    }
}

double percentile(vector<double>& v, double p)
{
    if(v.empty())
    {
        return 0;
    }
    sort(v.begin(), v.end());
    return v[static_cast<size_t>((v.size() - 1) * p + 0.5)];
}

// Calls f sequentially for `ms` milliseconds (after `warm` calls); prints the calls per
// second and the p50 / p99 latency in microseconds under name, name_p50, name_p99.
void sequential(const string& name, int warm, int ms, const function<void()>& f)
{
    for(int i = 0; i < warm; ++i)
    {
        f();
    }
    vector<double> lat;
    lat.reserve(200000);
    auto start = Clock::now();
    auto end = start + chrono::milliseconds(ms);
    auto t = start;
    while(t < end)
    {
        f();
        auto now = Clock::now();
        lat.push_back(chrono::duration<double, micro>(now - t).count());
        t = now;
    }
    double secs = chrono::duration<double>(t - start).count();
    result(name, lat.size() / secs, "calls/s");
    result(name + "_p50", percentile(lat, 0.5), "us");
    result(name + "_p99", percentile(lat, 0.99), "us");
}

class EchoI : public Echo
{
public:
    string echoString(string s, const Ice::Current&) override { return s; }
};

}

int main(int argc, char* argv[])
{
    if(argc < 3)
    {
        cerr << "usage: ice-router-client <proxy-string> <milliseconds> [--Ice.Prop=value ...]" << endl;
        return 2;
    }
    string proxy = argv[1];
    int ms = atoi(argv[2]);
    try
    {
        Ice::InitializationData init;
        init.properties = Ice::createProperties();
        init.properties->setProperty("Ice.MessageSizeMax", "100000");
        vector<string> rest;
        for(int i = 3; i < argc; ++i)
        {
            string a = argv[i];
            if(a.compare(0, 7, "--only=") == 0)
            {
                only = a.substr(7);
            }
            else
            {
                rest.push_back(a);
            }
        }
        init.properties->parseCommandLineOptions("", rest);
        Ice::CommunicatorHolder ich(init);
        auto communicator = ich.communicator();
        shared_ptr<Ice::ObjectAdapter> adapter;
        string category;
        auto defaultRouter = communicator->getDefaultRouter();
        shared_ptr<Glacier2::RouterPrx> router;
        if(defaultRouter)
        {
            router = Ice::checkedCast<Glacier2::RouterPrx>(defaultRouter);
            if(!router)
            {
                throw runtime_error("Ice.Default.Router is not a Glacier2 router");
            }
            router->createSession("bench", "bench");
            category = router->getCategoryForClient();
            adapter = communicator->createObjectAdapterWithRouter("Callbacks", router);
        }
        else
        {
            adapter = communicator->createObjectAdapterWithEndpoints("Callbacks", "tcp -h 127.0.0.1");
            category = "direct";
        }
        auto echo = Ice::uncheckedCast<EchoPrx>(adapter->add(make_shared<EchoI>(), Ice::Identity{"echo", category}));
        adapter->activate();
        auto tester = Ice::uncheckedCast<TesterPrx>(communicator->stringToProxy(proxy));
        tester->ice_ping();

        runTest("twoway", [&] { sequential("twoway", 2000, ms, [&] { tester->ping(); }); });

        runTest("ami", [&] {
            // Asynchronous pings, at most 100 in flight, for ms milliseconds.
            mutex m;
            condition_variable cv;
            int inFlight = 0;
            long done = 0;
            bool failed = false;
            string failure;
            auto start = Clock::now();
            auto end = start + chrono::milliseconds(ms);
            while(Clock::now() < end)
            {
                {
                    unique_lock<mutex> lock(m);
                    cv.wait(lock, [&] { return inFlight < 100 || failed; });
                    if(failed)
                    {
                        break;
                    }
                    ++inFlight;
                }
                tester->pingAsync(
                    [&] {
                        lock_guard<mutex> lock(m);
                        --inFlight;
                        ++done;
                        cv.notify_all();
                    },
                    [&](exception_ptr e) {
                        lock_guard<mutex> lock(m);
                        --inFlight;
                        failed = true;
                        try
                        {
                            rethrow_exception(e);
                        }
                        catch(const exception& ex)
                        {
                            failure = ex.what();
                        }
                        cv.notify_all();
                    });
            }
            unique_lock<mutex> lock(m);
            cv.wait(lock, [&] { return inFlight == 0; });
            if(failed)
            {
                throw runtime_error(failure);
            }
            result("ami", done / chrono::duration<double>(Clock::now() - start).count(), "calls/s");
        });

        runTest("oneway", [&] {
            auto oneway = tester->ice_oneway();
            tester->resetCounter();
            auto start = Clock::now();
            auto end = start + chrono::milliseconds(ms);
            int sent = 0;
            while(Clock::now() < end)
            {
                for(int i = 0; i < 100; ++i)
                {
                    oneway->incCounter(1);
                }
                sent += 100;
            }
            auto deadline = Clock::now() + chrono::seconds(ms > 1000 ? 60 : 10);
            int got = 0;
            while((got = tester->getCounter()) != sent)
            {
                if(Clock::now() > deadline)
                {
                    throw runtime_error("the oneways did not all arrive in time: " + to_string(got) + " of " +
                                        to_string(sent));
                }
                this_thread::sleep_for(chrono::milliseconds(1));
            }
            result("oneway", sent / chrono::duration<double>(Clock::now() - start).count(), "msg/s");
        });

        runTest("bytes", [&] {
            Interop::ByteSeq payload(500000);
            for(size_t k = 0; k < payload.size(); ++k)
            {
                payload[k] = static_cast<Ice::Byte>(k);
            }
            sequential("bytes", 20, ms, [&] { tester->sendByteSeq(payload); });
        });

        runTest("callback", [&] {
            sequential("callback", 200, ms, [&] {
                if(tester->callEcho(echo, "hi") != "hi")
                {
                    throw runtime_error("callEcho returned something else");
                }
            });
        });

        if(router)
        {
            try
            {
                router->destroySession();
            }
            catch(const Ice::LocalException&)
            {
                // The router closes the connection as it destroys the session.
            }
        }
    }
    catch(const exception& e)
    {
        cerr << "ice-router-client: " << e.what() << endl;
        return 1;
    }
    return allProduced ? 0 : 1;
}
